// The CLI reads and writes .json.gz: including gzip.hpp installs the zlib codec (target memplan::gzip).
#include <memplan/io/gzip.hpp>
