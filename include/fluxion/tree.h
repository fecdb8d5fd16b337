// Nested containers of Tensors (or Arrays): a loop carry, a function's outputs, its inputs.
// A tree is a leaf, or a std::vector, std::array, std::pair or std::tuple of trees. Trees are
// flattened to a list of leaves in order, and rebuilt with another leaf type in the same shape.
#pragma once

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace fluxion::tree {

// Rebind<T, From, To>: the tree type T with every leaf of type From replaced by To.
template <class T, class From, class To>
struct RebindT;
template <class From, class To>
struct RebindT<From, From, To> {
  using type = To;
};
template <class U, class From, class To>
struct RebindT<std::vector<U>, From, To> {
  using type = std::vector<typename RebindT<U, From, To>::type>;
};
template <class U, std::size_t N, class From, class To>
struct RebindT<std::array<U, N>, From, To> {
  using type = std::array<typename RebindT<U, From, To>::type, N>;
};
template <class A, class B, class From, class To>
struct RebindT<std::pair<A, B>, From, To> {
  using type = std::pair<typename RebindT<A, From, To>::type, typename RebindT<B, From, To>::type>;
};
template <class... Us, class From, class To>
struct RebindT<std::tuple<Us...>, From, To> {
  using type = std::tuple<typename RebindT<Us, From, To>::type...>;
};
template <class T, class From, class To>
using Rebind = typename RebindT<T, From, To>::type;

// is_tree<T, Leaf>: whether T is a tree whose leaves are Leaf.
template <class T, class Leaf>
struct IsTreeT : std::false_type {};
template <class Leaf>
struct IsTreeT<Leaf, Leaf> : std::true_type {};
template <class U, class Leaf>
struct IsTreeT<std::vector<U>, Leaf> : IsTreeT<U, Leaf> {};
template <class U, std::size_t N, class Leaf>
struct IsTreeT<std::array<U, N>, Leaf> : IsTreeT<U, Leaf> {};
template <class A, class B, class Leaf>
struct IsTreeT<std::pair<A, B>, Leaf> : std::bool_constant<IsTreeT<A, Leaf>::value && IsTreeT<B, Leaf>::value> {};
template <class... Us, class Leaf>
struct IsTreeT<std::tuple<Us...>, Leaf> : std::bool_constant<(IsTreeT<Us, Leaf>::value && ...)> {};
template <class T, class Leaf>
inline constexpr bool is_tree = IsTreeT<T, Leaf>::value;

// Appends the leaves of `t` to `out` in order.
template <class Leaf, class T>
void flatten(const T& t, std::vector<Leaf>& out) {
  if constexpr (std::is_same_v<T, Leaf>) {
    out.push_back(t);
  } else if constexpr (requires { std::tuple_size<T>::value; }) {
    std::apply([&](const auto&... xs) { (flatten<Leaf>(xs, out), ...); }, t);
  } else {
    static_assert(
        requires { t.begin(); }, "a tree is a leaf (Tensor or Array) or a vector/array/pair/tuple of trees");
    for (const auto& x : t) flatten<Leaf>(x, out);
  }
}

// Rebuilds a tree shaped like `like` (leaves of type From) with leaves of type To taken in order
// from `*it`, advancing it.
template <class From, class To, class T>
Rebind<T, From, To> rebuild(const T& like, const To*& it) {
  if constexpr (std::is_same_v<T, From>) {
    return *it++;
  } else if constexpr (requires { std::tuple_size<T>::value; }) {
    return std::apply([&](const auto&... xs) { return Rebind<T, From, To>{rebuild<From, To>(xs, it)...}; }, like);
  } else {
    Rebind<T, From, To> out;
    out.reserve(like.size());
    for (const auto& x : like) out.push_back(rebuild<From, To>(x, it));
    return out;
  }
}

template <class Leaf, class T>
std::size_t count(const T& t) {
  std::vector<Leaf> leaves;
  flatten<Leaf>(t, leaves);
  return leaves.size();
}

}  // namespace fluxion::tree
