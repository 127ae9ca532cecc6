#pragma once
// All buffer placers (umbrella header).
#include <memplan/core/any_stage.hpp>
#include <memplan/core/best_of.hpp>
#include <memplan/place/best_fit.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/place/bump.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/place/exact.hpp>
#include <memplan/place/gergov.hpp>
#include <memplan/place/greedy_by_breadth.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/place/lower_bound.hpp>
#include <memplan/place/mincost_flow.hpp>
#include <memplan/place/olla_ilp.hpp>
#include <memplan/place/online/caching_allocator.hpp>
#include <memplan/place/online/free_list.hpp>
#include <memplan/place/pyramid.hpp>
