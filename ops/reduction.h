// How a loss reduces its per-element values: none (as they are), mean or sum (torch's reduction=).
#pragma once

namespace minidl {

enum class Reduction { None, Mean, Sum };

}  // namespace minidl
