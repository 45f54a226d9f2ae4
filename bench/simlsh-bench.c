/* simlsh-bench SUBCOMMAND [options]: prints one JSON object per run. */
#include <stdio.h>
#include <string.h>

#include "bench.h"

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "sign") == 0)
        return bench_sign(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "index") == 0)
        return bench_index(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "forest") == 0)
        return bench_forest(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "ensemble") == 0)
        return bench_ensemble(argc - 1, argv + 1);
    fprintf(stderr,
            "usage: simlsh-bench sign|index|forest|ensemble [options]  (--help for each)\n");
    return 2;
}
