// Progress of long work (loading a model: reading the file, placing weights, compiling).
#pragma once

#include <algorithm>
#include <functional>
#include <string>

#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

// Called with the fraction done, in [0, 1], never decreasing, ending with 1 when the work
// succeeds. Returning false cancels: the work stops at its next report with
// StatusCode::cancelled. Called on the thread that does the work.
using ProgressFn = std::function<bool(double fraction)>;

// A part [begin, end] of a caller's progress: reports of 0..1 made to it reach the caller's
// callback scaled into that part. Without a callback every report succeeds.
class TESSERA_API ProgressPart {
 public:
  ProgressPart() = default;
  ProgressPart(const ProgressFn* fn, double begin, double end) : fn_(fn), begin_(begin), end_(end) {}
  // The part [a, b] of this part.
  ProgressPart sub(double a, double b) const {
    return ProgressPart(fn_, begin_ + (end_ - begin_) * a, begin_ + (end_ - begin_) * b);
  }
  // Reports `fraction` of this part; an error when the callback asked to stop, naming `what`.
  Status report(double fraction, const std::string& what) const {
    if (!fn_ || !*fn_) return Status::Ok();
    const double f = begin_ + (end_ - begin_) * std::clamp(fraction, 0.0, 1.0);
    if (!(*fn_)(f)) return Status(StatusCode::cancelled, what + ": cancelled by the progress callback");
    return Status::Ok();
  }
  bool active() const { return fn_ && *fn_; }
  // This part as a callback of its own (empty without one), for work that takes a
  // ProgressFn; it refers to the caller's callback, which must outlive it.
  ProgressFn as_fn() const {
    if (!active()) return nullptr;
    return [fn = fn_, b = begin_, e = end_](double f) { return (*fn)(b + (e - b) * std::clamp(f, 0.0, 1.0)); };
  }

 private:
  const ProgressFn* fn_ = nullptr;
  double begin_ = 0, end_ = 1;
};

}  // namespace tessera
