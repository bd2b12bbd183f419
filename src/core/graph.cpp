#include "tessera/graph.h"

#include <sstream>

#include "core/checked.h"
#include "ops/attrs_check.h"

namespace tessera {

ConstData ConstData::from_vector(std::vector<uint8_t> bytes) {
  auto owner = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  ConstData d;
  d.data = owner->data();
  d.size = static_cast<int64_t>(owner->size());
  d.owner = owner;
  return d;
}

Result<int64_t> Tensor::host_bytes() const {
  // Format::row_major(dtype, shape).byte_size() computed in place: kernels ask for it in
  // the token loop, and building a Format copies the shape. Anything unusual (a negative
  // dim, an overflow, a row that is not whole blocks) takes the Format path for its message.
  Size elements = 1;
  for (int64_t d : shape) elements *= d;
  const int64_t inner = shape.empty() ? 1 : shape.back();
  if (elements.ok() && inner >= 0) {
    auto row = dtype_row_bytes(dtype, inner);
    if (row.ok()) {
      const Size total = Size(inner == 0 ? 0 : elements.value_or_zero() / inner) * *row;
      if (total.ok()) return total.value_or_zero();
    }
  }
  return host_format().byte_size();
}

std::string Node::label() const {
  std::string s = op_name(op);
  if (!name.empty()) s += " '" + name + "'";
  return s;
}

TensorId Graph::add_tensor(Tensor t) {
  t.id = static_cast<TensorId>(tensors_.size());
  tensors_.push_back(std::move(t));
  return tensors_.back().id;
}

static Status check_node_ids(const Graph& g, const Node& n) {
  if (static_cast<int>(n.op) >= kNumOps)
    return error(StatusCode::invalid_argument, "unknown op id ", static_cast<int>(n.op), " in node '", n.name,
                 "' (ops.def has ", kNumOps, " ops)");
  int nin = static_cast<int>(n.inputs.size());
  if (nin < op_min_inputs(n.op) || nin > op_max_inputs(n.op))
    return error(StatusCode::invalid_argument, "[", op_name(n.op), "] ", n.label(), ": ", nin,
                 " inputs, expected ", op_min_inputs(n.op), "..", op_max_inputs(n.op));
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    TensorId id = n.inputs[i];
    if (id == kNoTensor && static_cast<int>(i) >= op_min_inputs(n.op)) continue;
    if (id < 0 || id >= static_cast<TensorId>(g.tensors().size()))
      return error(StatusCode::invalid_argument, "[", op_name(n.op), "] ", n.label(), ": input ", i,
                   " refers to tensor ", id, " which does not exist");
  }
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] < 0 || n.outputs[i] >= static_cast<TensorId>(g.tensors().size()))
      return error(StatusCode::invalid_argument, "[", op_name(n.op), "] ", n.label(), ": output ", i,
                   " refers to tensor ", n.outputs[i], " which does not exist");
  if (n.outputs.empty())
    return error(StatusCode::invalid_argument, "[", op_name(n.op), "] ", n.label(), ": no outputs");
  return Status::Ok();
}

Status Graph::add_node(Node n) {
  TS_RETURN_IF_ERROR(check_node_ids(*this, n));
  TS_RETURN_IF_ERROR(attr::normalize_and_check(n));
  nodes_.push_back(std::move(n));
  return Status::Ok();
}

Result<TensorId> Graph::add_op(OpKind op, std::vector<TensorId> in, AttrMap attrs,
                               std::string name, std::optional<DType> out_dtype, QuantParams out_quant) {
  Node n;
  n.op = op;
  n.name = std::move(name);
  n.inputs = std::move(in);
  n.attrs = std::move(attrs);
  // Provisional output so that shape inference can see the requested dtype.
  Tensor out;
  out.name = n.name.empty() ? std::string(op_name(op)) + "_" + std::to_string(nodes_.size()) : n.name;
  out.dtype = out_dtype.value_or(DType::f32);
  out.quant = std::move(out_quant);
  TensorId oid = add_tensor(out);
  n.outputs = {oid};
  if (Status s = check_node_ids(*this, n); !s.ok()) {
    tensors_.pop_back();
    return s;
  }
  if (Status s = attr::normalize_and_check(n); !s.ok()) {
    tensors_.pop_back();
    return s;
  }
  auto inferred = infer_outputs(*this, n);
  if (!inferred.ok()) {
    tensors_.pop_back();
    return inferred.status();
  }
  tensors_[oid].shape = (*inferred)[0].shape;
  if (!out_dtype) tensors_[oid].dtype = (*inferred)[0].dtype;
  // Outputs that update a state input in place (lstm's new state) come with the node.
  for (size_t k = 1; k < inferred->size(); ++k) {
    if (op_aliased_input(op, k) < 0) break;
    const int src = op_aliased_input(op, k);
    Tensor s;
    s.name = tensors_[oid].name + ":" + std::to_string(k);
    s.shape = (*inferred)[k].shape;
    s.dtype = (*inferred)[k].dtype;
    if (static_cast<size_t>(src) < n.inputs.size() && n.inputs[src] != kNoTensor) s.quant = tensors_[n.inputs[src]].quant;
    n.outputs.push_back(add_tensor(s));
  }
  nodes_.push_back(std::move(n));
  return oid;
}

std::optional<TensorId> Graph::find_tensor(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return t.id;
  return std::nullopt;
}

// Every size the kernels will compute from this tensor fits int64, its constant data (if
// any) holds at least its byte size, and its quantization arrays match its shape.
static Status validate_tensor(const Tensor& t) {
  const std::string what = std::string(role_name(t.role)) + " tensor '" + t.name + "'";
  TS_ASSIGN_OR_RETURN(int64_t bytes, checked_host_bytes(t.shape, t.dtype, what));
  if (t.role == Role::weight) {
    if (!t.data) return error(StatusCode::invalid_argument, what, " has no data");
    // The importers demand exact sizes of file buffers (and always point at real bytes);
    // here only reading past the end matters.
    if (t.data->size < bytes)
      return error(StatusCode::invalid_argument, what, " ", shape_str(t.shape), " ", dtype_name(t.dtype), " needs ",
                   bytes, " bytes but its data has ", t.data->size);
  }
  const QuantParams& q = t.quant;
  if (q.empty()) return Status::Ok();
  if (!q.zero_point.empty() && q.zero_point.size() != 1 && q.zero_point.size() != q.scale.size())
    return error(StatusCode::invalid_argument, what, ": ", q.scale.size(), " quantization scales but ",
                 q.zero_point.size(), " zero points");
  if (q.scale.size() > 1 || q.axis >= 0) {
    // A vector (a bias) has one axis; graphs built in code may leave it unnamed (-1).
    const bool vector_axis = q.axis < 0 && t.shape.size() == 1;
    if (!vector_axis && (q.axis < 0 || q.axis >= static_cast<int>(t.shape.size())))
      return error(StatusCode::invalid_argument, what, " ", shape_str(t.shape), ": quantization axis ", q.axis,
                   " is outside its rank");
    const int axis = vector_axis ? 0 : q.axis;
    if (q.scale.size() != 1 && static_cast<int64_t>(q.scale.size()) != t.shape[axis])
      return error(StatusCode::invalid_argument, what, " ", shape_str(t.shape), ": ", q.scale.size(),
                   " per-axis scales for axis ", axis, " of size ", t.shape[axis]);
  }
  return Status::Ok();
}

Status Graph::validate() const {
  std::vector<bool> produced(tensors_.size(), false);
  for (const auto& t : tensors_)
    if (t.role == Role::weight || t.role == Role::input || t.role == Role::state) produced[t.id] = true;
  for (const auto& t : tensors_) TS_RETURN_IF_ERROR(validate_tensor(t));
  for (const auto& n : nodes_) {
    TS_RETURN_IF_ERROR(check_node_ids(*this, n));
    TS_RETURN_IF_ERROR(attr::check(n));
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      TensorId id = n.inputs[i];
      if (id == kNoTensor) continue;
      if (!produced[id])
        return error(StatusCode::invalid_argument, "[", op_name(n.op), "] ", n.label(), ": input ", i, " '",
                     tensors_[id].name, "' is used before any node produces it");
    }
    TS_ASSIGN_OR_RETURN(auto outs, infer_outputs(*this, n));
    for (size_t i = 0; i < n.outputs.size() && i < outs.size(); ++i) {
      const Tensor& t = tensors_[n.outputs[i]];
      if (t.shape != outs[i].shape)
        return error(StatusCode::invalid_argument, "[", op_name(n.op), "] ", n.label(), ": output ", i, " '", t.name,
                     "' has shape ", shape_str(t.shape), " but the op produces ", shape_str(outs[i].shape));
      produced[n.outputs[i]] = true;
    }
  }
  for (TensorId id : outputs)
    if (!produced[id])
      return error(StatusCode::invalid_argument, "graph output '", tensors_[id].name, "' is never produced");
  return Status::Ok();
}

std::string Graph::dump() const {
  std::ostringstream os;
  auto tstr = [&](TensorId id) {
    if (id == kNoTensor) return std::string("-");
    const Tensor& t = tensors_[id];
    std::ostringstream s;
    s << '%' << id << ":" << t.name << " " << dtype_name(t.dtype) << shape_str(t.shape);
    if (t.role != Role::activation) s << " (" << role_name(t.role) << ")";
    return s.str();
  };
  os << "graph: " << tensors_.size() << " tensors, " << nodes_.size() << " nodes\n";
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    os << "  #" << i << " " << n.label() << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) os << (k ? ", " : "") << tstr(n.inputs[k]);
    os << ") -> ";
    for (size_t k = 0; k < n.outputs.size(); ++k) os << (k ? ", " : "") << tstr(n.outputs[k]);
    os << "\n";
  }
  return os.str();
}

}  // namespace tessera
