#pragma once
// The buffer-placement contract lives in core/ (core/buffer.hpp); this header forwards to it.
#include <memplan/core/buffer.hpp>
