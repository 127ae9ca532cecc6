#pragma once
// All buffer placers (umbrella header).
#include <memplan/place/any_placer.hpp>
#include <memplan/place/best_fit.hpp>
#include <memplan/place/best_of.hpp>
#include <memplan/place/buffer.hpp>
#include <memplan/place/bump.hpp>
#include <memplan/place/by_name.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/place/exact.hpp>
#include <memplan/place/gergov.hpp>
#include <memplan/place/greedy_by_breadth.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/place/lower_bound.hpp>
#include <memplan/place/mincost_flow.hpp>
#include <memplan/place/online/caching_allocator.hpp>
#include <memplan/place/online/free_list.hpp>
#include <memplan/place/pyramid.hpp>
