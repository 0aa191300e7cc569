// DDP's bucket assignment: see bucket_assignment.h.
#include "distributed/bucket_assignment.h"

#include <algorithm>
#include <map>

namespace minidl::dist {

std::vector<std::vector<size_t>> compute_bucket_assignment(const std::vector<BucketParam>& params,
                                                           size_t first_bucket_bytes, size_t bucket_cap_bytes) {
  struct Open {
    std::vector<size_t> members;
    size_t bytes = 0;
    bool first = true;  // this dtype has not closed a bucket yet
  };
  std::map<DType, Open> open;
  std::vector<std::vector<size_t>> buckets;
  for (size_t k = params.size(); k-- > 0;) {
    Open& b = open[params[k].dtype];
    b.members.push_back(k);
    b.bytes += static_cast<size_t>(params[k].numel) * element_size(params[k].dtype);
    if (b.bytes >= (b.first ? first_bucket_bytes : bucket_cap_bytes)) {
      buckets.push_back(std::move(b.members));
      b.members.clear();
      b.bytes = 0;
      b.first = false;
    }
  }
  for (auto& [dtype, b] : open)
    if (!b.members.empty()) buckets.push_back(std::move(b.members));
  // Launch order = the order buckets are expected to complete in backward: a bucket is complete when
  // its earliest-registered parameter (the last to get its gradient) is, so by that index, descending.
  std::stable_sort(buckets.begin(), buckets.end(),
                   [](const std::vector<size_t>& a, const std::vector<size_t>& b) { return a.back() > b.back(); });
  return buckets;
}

}  // namespace minidl::dist
