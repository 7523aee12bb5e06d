/* main's return value is the process's exit status. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int code = argc > 1 ? atoi(argv[1]) : 0;
  printf("returning %d\n", code);
  return code;
}
