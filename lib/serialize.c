/* placeholder: being written */
typedef int simlsh__placeholder_t;
