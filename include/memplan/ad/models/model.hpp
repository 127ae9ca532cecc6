#pragma once
// What every model builder returns: the program of one training step plus the ids of its data feeds
// and of the tensors a caller reads (loss, class probabilities); and eager helpers to train/evaluate.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <memplan/ad/eager.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/ad/tensor.hpp>

namespace memplan::ad {

struct model {
  program step;                  // forward + loss + backward + optimizer update
  std::int32_t features = -1;    // input feed: [batch, sample_shape...]
  std::int32_t labels = -1;      // input feed: [batch] class ids
  std::int32_t loss = -1;        // output: [1]
  std::int32_t probs = -1;       // output: [batch, classes]
  std::int64_t batch = 0;
  std::int64_t classes = 0;
};

// Fraction of rows of probs [rows, classes] whose argmax (first maximum) equals the label.
inline double accuracy(std::span<const float> probs, std::span<const float> labels, std::int64_t classes) {
  if (labels.empty()) return 0.0;
  std::int64_t right = 0;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < classes; ++c)
      if (probs[r * static_cast<std::size_t>(classes) + static_cast<std::size_t>(c)] >
          probs[r * static_cast<std::size_t>(classes) + static_cast<std::size_t>(best)])
        best = c;
    right += static_cast<float>(best) == labels[r];
  }
  return static_cast<double>(right) / static_cast<double>(labels.size());
}

// One training step with the next batch of a stream; returns the loss. Runner is eager_runner or
// planned_runner (ad/run_plan.hpp): both take data through data_stream::next into the feed tensors,
// so eager and planned training see the same numbers by construction.
template <class Runner, class Stream>
float train_step(Runner& r, const model& m, Stream& data) {
  data.next(r.data(m.features), r.data(m.labels));
  r.run();
  return r.data(m.loss)[0];
}

// Test accuracy over `batches` fresh batches of a stream, forward nodes only (batch norm uses the
// statistics of each test batch: training mode is the only mode the kernels have).
template <class Runner, class Stream>
double evaluate(Runner& r, const model& m, Stream& data, int batches) {
  double acc = 0.0;
  for (int b = 0; b < batches; ++b) {
    data.next(r.data(m.features), r.data(m.labels));
    r.run_forward();
    acc += accuracy(r.data(m.probs), r.data(m.labels), m.classes);
  }
  return batches > 0 ? acc / batches : 0.0;
}

}  // namespace memplan::ad
