#include "tessera/backend/region.h"

namespace tessera {

Region Region::rows(const Shape& full, int axis, int64_t r0, int64_t r1) {
  int rank = static_cast<int>(full.size());
  if (axis < 0) axis += rank;
  Region r;
  r.begin.assign(full.size(), 0);
  r.end = full;
  if (axis >= 0 && axis < rank) {
    r.begin[axis] = r0;
    r.end[axis] = r1;
  }
  return r;
}

Shape Region::extent(const Shape& full) const {
  if (is_whole()) return full;
  Shape e(full.size());
  for (size_t i = 0; i < full.size(); ++i) e[i] = end[i] - begin[i];
  return e;
}

Status Region::validate(const Shape& full) const {
  if (is_whole()) return Status::Ok();
  if (begin.size() != full.size() || end.size() != full.size())
    return error(StatusCode::out_of_range, "region of rank ", begin.size(), " for a tensor of shape ",
                 shape_str(full));
  for (size_t i = 0; i < full.size(); ++i)
    if (begin[i] < 0 || end[i] > full[i] || begin[i] > end[i])
      return error(StatusCode::out_of_range, "region [", begin[i], ", ", end[i], ") of dim ", i,
                   " is outside the tensor's shape ", shape_str(full));
  return Status::Ok();
}

int Region::partial_axis(const Shape& full) const {
  if (is_whole()) return -1;
  int axis = -1;
  for (size_t i = 0; i < full.size(); ++i) {
    if (begin[i] == 0 && end[i] == full[i]) continue;
    if (axis >= 0) return -2;
    axis = static_cast<int>(i);
  }
  return axis;
}

}  // namespace tessera
