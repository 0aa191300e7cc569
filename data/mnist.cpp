// MNIST: finding the split's two IDX files, reading and cross-checking them, and turning stored bytes
// into f32 batches through a 256-entry table (scale and normalization folded together).
#include "data/mnist.h"

#include <cstring>
#include <filesystem>

#include "data/idx.h"
#include "framework/error.h"

namespace minidl::data {

MNISTOptions& MNISTOptions::normalize(float mean, float std) {
  MINIDL_CHECK(std > 0.0f, "MNISTOptions::normalize", "std must be > 0, got ", std);
  normalize_ = true;
  mean_ = mean;
  std_ = std;
  return *this;
}

namespace {

// "<root>/<stem>", "<root>/<stem>.gz" or the "<prefix>-images.idx3-ubyte" spelling some mirrors use.
std::string find_file(const std::string& root, const std::string& prefix, const std::string& kind,
                      const std::string& idx) {
  namespace fs = std::filesystem;
  const std::string stem = prefix + "-" + kind + "-" + idx + "-ubyte";
  for (const std::string& name : {stem, stem + ".gz", prefix + "-" + kind + "." + idx + "-ubyte",
                                  prefix + "-" + kind + "." + idx + "-ubyte.gz"}) {
    fs::path p = fs::path(root) / name;
    std::error_code ec;
    if (fs::exists(p, ec)) return p.string();
  }
  MINIDL_FAIL("MNIST", "no ", stem, "[.gz] in '", root,
              "' (scripts/setup_data.sh puts MNIST in data/mnist and Fashion-MNIST in data/fashion-mnist)");
}

}  // namespace

MNIST::MNIST(const std::string& root, Split split, MNISTOptions options) : options_(options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  MINIDL_CHECK(fs::is_directory(root, ec), "MNIST", "directory '", root,
               "' does not exist (run scripts/setup_data.sh to fetch the data sets)");
  const std::string prefix = split == Split::Train ? "train" : "t10k";
  images_path_ = find_file(root, prefix, "images", "idx3");
  labels_path_ = find_file(root, prefix, "labels", "idx1");

  IdxData images = read_idx_u8(images_path_, 3);
  IdxData labels = read_idx_u8(labels_path_, 1);
  MINIDL_CHECK(images.dims[0] == labels.dims[0], "MNIST", images_path_, " has ", images.dims[0],
               " images but ", labels_path_, " has ", labels.dims[0], " labels: image/label count mismatch");

  int64_t n = images.dims[0];
  if (options_.limit_ > 0 && options_.limit_ < n) n = options_.limit_;
  const int64_t h = images.dims[1], w = images.dims[2];
  if (options_.num_classes_ > 0) {
    for (int64_t i = 0; i < n; ++i)
      MINIDL_CHECK(labels.values[i] < options_.num_classes_, "MNIST", labels_path_, ": label ",
                   int(labels.values[i]), " at index ", i, " is out of range (expected 0..",
                   options_.num_classes_ - 1, ")");
  }
  images_ = empty({n, h, w}, DType::U8);
  if (n > 0) std::memcpy(images_.data_ptr<uint8_t>(), images.values.data(), static_cast<size_t>(n * h * w));
  std::vector<int64_t> t(labels.values.begin(), labels.values.begin() + n);
  targets_ = from_vector(t, {n});
  fill_byte_lut(lut_, options_.normalize_ ? options_.mean_ : 0.0f,
                options_.normalize_ ? options_.std_ : 1.0f);
}

Example MNIST::get(int64_t index) const {
  check_index(index, size(), "MNIST::get");
  Tensor row = gather_rows_u8_to_f32(images_, 1, lut_, {index}, "MNIST::get");
  return Example{row.view({1, images_.size(1), images_.size(2)}),
                 scalar_tensor(static_cast<double>(targets_.data_ptr<int64_t>()[index]), DType::I64)};
}

Batch MNIST::get_batch(const std::vector<int64_t>& indices) const {
  const int64_t b = static_cast<int64_t>(indices.size());
  Tensor data = gather_rows_u8_to_f32(images_, 1, lut_, indices, "MNIST::get_batch");
  Tensor target = empty({b}, DType::I64);
  const int64_t* src = targets_.data_ptr<int64_t>();
  int64_t* dst = target.data_ptr<int64_t>();
  for (int64_t i = 0; i < b; ++i) dst[i] = src[indices[i]];  // indices checked by the gather above
  return Batch{data.view({b, 1, images_.size(1), images_.size(2)}), target, indices};
}

}  // namespace minidl::data
