// A C++ library using std::filesystem (GLIBCXX_3.4.26, GCC 9) and the no-argument
// std::string::reserve (GLIBCXX_3.4.29, GCC 11): libstdc++ versions beyond manylinux_2_28.
#include <filesystem>
#include <string>
extern "C" int cw_cxx(const char *p) {
    std::string s(p);
    s.reserve();
    return (int)std::filesystem::path(s).filename().string().size();
}
