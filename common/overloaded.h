// Overloaded: one visitor for std::visit made of several lambdas, one per alternative (a request
// kind, say), with a generic lambda catching the rest where wanted.
#pragma once

namespace ember {

template <typename... Handlers>
struct Overloaded : Handlers... {
  using Handlers::operator()...;
};
template <typename... Handlers>
Overloaded(Handlers...) -> Overloaded<Handlers...>;

}  // namespace ember
