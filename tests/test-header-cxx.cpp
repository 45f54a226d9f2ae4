/*
 * The public header from C++11: it compiles twice in a row, its extern "C"
 * block gives the declarations C linkage (otherwise this program would not
 * link against the shared library), and its constants are usable in
 * constant expressions.
 */
#include <simlsh.h>
#include <simlsh.h> // a second time: the guard must make this a no-op

#include <cstdio>
#include <cstring>
#include <memory>

static_assert(SIMLSH_OK == 0, "success is 0");
static_assert(SIMLSH_EINVAL == -1 && SIMLSH_EIO == -12, "released error values are frozen");
static_assert(SIMLSH_VERSION_NUMBER ==
                  SIMLSH_VERSION_MAJOR * 10000 + SIMLSH_VERSION_MINOR * 100 + SIMLSH_VERSION_PATCH,
              "version number layout");

namespace {

int failures = 0;

void expect(bool ok, const char *what, int line)
{
    if (!ok) {
        std::fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, line, what);
        failures++;
    }
}
#define EXPECT(cond) expect((cond), #cond, __LINE__)

struct params_deleter {
    void operator()(simlsh_params *p) const { simlsh_params_free(p); }
};
struct signature_deleter {
    void operator()(simlsh_signature *s) const { simlsh_signature_free(s); }
};

long live = 0;
void *counting_alloc(void *user, std::size_t size)
{
    ++*static_cast<long *>(user);
    return ::operator new(size);
}
void counting_free(void *user, void *ptr)
{
    --*static_cast<long *>(user);
    ::operator delete(ptr);
}

} // namespace

int main()
{
    EXPECT(std::strcmp(simlsh_strerror(SIMLSH_EINVAL), "invalid argument") == 0);
    EXPECT(std::strcmp(simlsh_error_name(SIMLSH_OK), "OK") == 0);
    EXPECT(simlsh_version_number() == SIMLSH_VERSION_NUMBER);

    {
        simlsh_allocator alloc = {counting_alloc, counting_free, &live};
        simlsh_params *raw = nullptr;
        EXPECT(simlsh_params_new(&raw, &alloc) == SIMLSH_OK);
        std::unique_ptr<simlsh_params, params_deleter> params(raw);
        EXPECT(params != nullptr);
        EXPECT(live > 0);

        EXPECT(simlsh_params_set_int(params.get(), SIMLSH_PARAM_NUM_PERM, 64) == 0);
        int rc = simlsh_params_set_int(params.get(), SIMLSH_PARAM_K, 0);
        EXPECT(rc == SIMLSH_EINVAL);
        EXPECT(std::strcmp(simlsh_strerror(rc), "invalid argument") == 0);

        simlsh_signature *sraw = nullptr;
        EXPECT(simlsh_signature_new(&sraw, params.get()) == 0);
        std::unique_ptr<simlsh_signature, signature_deleter> sig(sraw);
        const char text[] = "hello, C++ world";
        EXPECT(simlsh_signature_add_text(sig.get(), text, sizeof text - 1) == 0);
        EXPECT(simlsh_signature_num_perm(sig.get()) == 64);
        EXPECT(simlsh_signature_is_empty(sig.get()) == 0);
    }
    EXPECT(live == 0); // everything went back through the hooks

    std::printf("header-cxx: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
