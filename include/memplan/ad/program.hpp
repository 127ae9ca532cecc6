#pragma once
// ad::program: the executor-facing form of one training step. Tensors are storages (views never
// appear: a view is resolved onto its base when recorded), nodes are kernel calls with every
// dimension in their attributes, and run_node() executes one node given the float* of each input and
// output and a workspace pointer -- which is all an arena executor needs.
//
// This header gathers the parts, one job each:
//   initializer.hpp    initializer, init::*, fill_initial (first values of resident tensors)
//   program_types.hpp  kernel, node_attr, tensor_info, node, program
//   kernel_facts.hpp   extents, workspace_bytes, flops
//   validate.hpp       validate
//   run_node.hpp       run_node (dispatch to the kernels of ops.hpp)
#include <memplan/ad/initializer.hpp>
#include <memplan/ad/kernel_facts.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/ad/run_node.hpp>
#include <memplan/ad/validate.hpp>
