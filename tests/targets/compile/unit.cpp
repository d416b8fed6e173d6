// A C++ translation unit for clang++ to compile under --profile heap (tests/test_profile_stacks.py):
// templates, containers, regex and iostreams, so that the compiler allocates through many layers.
#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

template <typename K, typename V>
struct table {
	std::map<K, std::vector<V>> rows;
	void add(const K &k, V v) { rows[k].push_back(std::move(v)); }
	size_t count() const
	{
		size_t n = 0;
		for (const auto &r : rows)
			n += r.second.size();
		return n;
	}
};

using value = std::variant<int, double, std::string>;

static std::string show(const value &v)
{
	return std::visit([](const auto &x) {
		std::ostringstream o;
		o << x;
		return o.str();
	}, v);
}

int main(int argc, char **argv)
{
	table<std::string, value> t;
	table<int, std::string> u;
	std::unordered_map<std::string, std::function<int(int)>> ops = {
		{ "twice", [](int x) { return 2 * x; } }, { "square", [](int x) { return x * x; } },
	};
	std::regex re("([a-z]+)=([0-9]+)");
	for (int i = 1; i < argc; i++) {
		std::smatch m;
		std::string a = argv[i];
		if (std::regex_match(a, m, re)) {
			t.add(m[1], std::stoi(m[2]));
			u.add(std::stoi(m[2]), m[1]);
		}
	}
	std::set<std::string> names;
	for (auto &r : t.rows)
		for (auto &v : r.second)
			names.insert(show(v));
	std::vector<std::shared_ptr<std::string>> ptrs;
	for (auto &n : names)
		ptrs.push_back(std::make_shared<std::string>(n));
	std::sort(ptrs.begin(), ptrs.end(), [](auto &a, auto &b) { return *a > *b; });
	for (auto &p : ptrs)
		std::cout << *p << ' ' << ops["twice"](p->size()) << '\n';
	return (int)(t.count() + u.count()) & 1;
}
