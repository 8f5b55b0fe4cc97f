// OpenBLAS's own CBLAS header: cblas_sgemm plus openblas_set_num_threads.
#include <cblas-openblas.h>
