/* printf and malloc in a target region; under a plugin that sets up no
 * RPC server, LLVM 16's behaviour: printf returns -1, malloc NULL. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int ret = 0, null_block = 0, puts_ret = 0;
#pragma omp target map(from : ret, null_block, puts_ret)
  {
    ret = printf("from the device %d\n", 7);
    puts_ret = puts("puts from the device");
    void *p = malloc(64);
    null_block = p == NULL;
    free(p);
    free(NULL);
  }
  printf("printf=%d puts_nonnegative=%d malloc_null=%d\n", ret, puts_ret >= 0,
         null_block);
  return 0;
}
