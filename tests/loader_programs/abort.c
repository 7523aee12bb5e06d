/* abort() ends the process abnormally after what was printed. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  fputs("about to abort\n", stderr);
  puts("stdout before abort");
  fflush(stdout);
  abort();
}
