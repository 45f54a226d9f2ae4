/* Index queries (single, ids, batch) against brute-force references,
 * through removals, re-insertions and a clear. */
#include "index-common.h"
#include "testutil.h"

static void test_reference_queries(int store, int big)
{
    reference_scenario(store, big, check_queries);
}

int main(void)
{
    test_reference_queries(1, 0);
    test_reference_queries(0, 0);
    test_reference_queries(1, 1);
    test_reference_queries(0, 1);
    return tu_finish("index-query");
}
