// Coordinate-wise order statistics of a set of rows (trimmed mean, median, and their forms for a
// line search that adds copies of one vector to fixed rows), for the coordinate rules in robust/.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "kernels/batch_ops.h"

namespace phalanx::kernels {

// Per coordinate: sort the rows' values, drop the `trim` lowest and `trim` highest, and
// average the rest (summed in double in ascending order). Requires 2 * trim < rows.size()
// (checked). Rows must be finite: the rules drop non-finite rows first.
void coordinateTrimmedMean(Rows rows, std::size_t trim, std::span<float> out);

// Per coordinate median; the mean of the two middle values for an even count (NumPy's rule).
// Rows must be finite.
void coordinateMedian(Rows rows, std::span<float> out);

// Coordinate-wise order statistics of a fixed set of finite rows plus `copies` copies of one
// extra vector, for searches that try many extras against the same rows (the opt_* attacks'
// line search against cwtm or cwmed): the rows are sorted per coordinate once, then each extra
// costs a binary search and the kept values per coordinate instead of a sort. The results equal
// coordinateTrimmedMean / coordinateMedian on the full set bit for bit (the same values are
// summed in the same order). The extra must be finite.
struct SortedColumns {
  std::size_t rows = 0, dim = 0;
  std::vector<float> values;  // values[i * rows + k], ascending in k
};
SortedColumns sortColumns(Rows rows);
void trimmedMeanWithCopies(const SortedColumns& sorted, std::span<const float> extra,
                           std::size_t copies, std::size_t trim, std::span<float> out);
void medianWithCopies(const SortedColumns& sorted, std::span<const float> extra, std::size_t copies,
                      std::span<float> out);

}  // namespace phalanx::kernels
