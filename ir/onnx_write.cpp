// Streams an ONNX model's initializers from tensor storage (onnx_write.hpp).
// Protobuf writes a message's fields in field-number order; so does this
// file: the model's fields before `graph`, the graph (its fields before
// `initializer`, each initializer, its fields after), then the model's
// fields after `graph`. A message's length prefix is computed from the
// parts' sizes, never by serializing them twice.
#include "ir/onnx_write.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

namespace saturn::ir {

namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedOutputStream;

// The data of a sub-byte tensor, packed as ONNX stores it.
std::string packed_bytes(const Tensor& t, int bits) {
  const auto per_byte = static_cast<std::size_t>(8 / bits);
  std::string packed((t.numel() + per_byte - 1) / per_byte, '\0');
  for (std::size_t i = 0; i < t.numel(); ++i)
    packed[i / per_byte] =
        static_cast<char>(packed[i / per_byte] | ((t.bytes()[i] & ((1u << bits) - 1)) << (i % per_byte * bits)));
  return packed;
}

onnx::TensorProto header(const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(dtype_to_onnx(t.dtype()));
  for (auto d : t.dims()) p.add_dims(d);
  return p;
}

// An initializer's bytes as written: the tensor's storage, or the packed
// copy of a sub-byte tensor.
class Payload {
 public:
  explicit Payload(const Tensor& t) : tensor_(&t), packed_(packed_bits(t.dtype()) < 8) {
    if (packed_) packed_bytes_ = packed_bytes(t, packed_bits(t.dtype()));
  }
  const char* data() const { return packed_ ? packed_bytes_.data() : reinterpret_cast<const char*>(tensor_->bytes()); }
  std::size_t size() const { return packed_ ? packed_bytes_.size() : tensor_->nbytes(); }

 private:
  const Tensor* tensor_;
  bool packed_;
  std::string packed_bytes_;
};

std::size_t length_delimited_size(std::size_t payload) { return CodedOutputStream::VarintSize64(payload) + payload; }

void write_key(std::ostream& out, int field, std::size_t length) {
  std::uint8_t buf[2 * 10];
  std::uint8_t* end = CodedOutputStream::WriteVarint32ToArray(
      WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED), buf);
  end = CodedOutputStream::WriteVarint64ToArray(length, end);
  out.write(reinterpret_cast<const char*>(buf), end - buf);
}

std::size_t key_size(int field) {
  return CodedOutputStream::VarintSize32(WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
}

}  // namespace

onnx::TensorProto tensor_proto(const Tensor& t, const std::string& name) {
  onnx::TensorProto p = header(t, name);
  const Payload data(t);
  p.set_raw_data(std::string(data.data(), data.size()));
  return p;
}

bool write_onnx_model(std::ostream& out, const onnx::ModelProto& model, const std::vector<NamedTensor>& initializers) {
  // The model's and the graph's fields on either side of the streamed one.
  onnx::ModelProto model_head = model, model_tail;
  model_head.clear_graph();
  model_tail.mutable_opset_import()->Swap(model_head.mutable_opset_import());
  model_tail.mutable_metadata_props()->Swap(model_head.mutable_metadata_props());
  model_tail.mutable_training_info()->Swap(model_head.mutable_training_info());
  model_tail.mutable_functions()->Swap(model_head.mutable_functions());
  onnx::GraphProto graph_head, graph_tail = model.graph();
  graph_head.mutable_node()->Swap(graph_tail.mutable_node());
  if (graph_tail.has_name()) graph_head.set_name(graph_tail.name());
  graph_tail.clear_name();
  graph_tail.clear_initializer();

  const int tensor_field = onnx::GraphProto::kInitializerFieldNumber;
  const int raw_field = onnx::TensorProto::kRawDataFieldNumber;
  std::vector<onnx::TensorProto> headers;
  std::vector<Payload> payloads;
  std::vector<std::size_t> tensor_sizes;
  std::size_t graph_size = graph_head.ByteSizeLong() + graph_tail.ByteSizeLong();
  for (const auto& [name, t] : initializers) {
    headers.push_back(header(t, name));
    payloads.emplace_back(t);
    tensor_sizes.push_back(headers.back().ByteSizeLong() + key_size(raw_field) +
                           length_delimited_size(payloads.back().size()));
    graph_size += key_size(tensor_field) + length_delimited_size(tensor_sizes.back());
  }

  model_head.SerializeToOstream(&out);
  if (model.has_graph()) {
    write_key(out, onnx::ModelProto::kGraphFieldNumber, graph_size);
    graph_head.SerializeToOstream(&out);
    for (std::size_t i = 0; i < initializers.size(); ++i) {
      write_key(out, tensor_field, tensor_sizes[i]);
      headers[i].SerializeToOstream(&out);
      write_key(out, raw_field, payloads[i].size());
      out.write(payloads[i].data(), static_cast<std::streamsize>(payloads[i].size()));
    }
    graph_tail.SerializeToOstream(&out);
  }
  model_tail.SerializeToOstream(&out);
  return static_cast<bool>(out);
}

}  // namespace saturn::ir
