/* Echoes the arguments after argv[0] and the environment, in order. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv, char **envp) {
  printf("argc=%d\n", argc);
  for (int i = 1; i < argc; ++i)
    printf("argv[%d]=%s\n", i, argv[i]);
  for (int i = 0; envp[i]; ++i)
    printf("envp[%d]=%s\n", i, envp[i]);
  const char *v = getenv("LOADER_TEST_VAR");
  printf("getenv(LOADER_TEST_VAR)=%s\n", v ? v : "(unset)");
  printf("getenv(NOT_SET_ANYWHERE)=%s\n",
         getenv("NOT_SET_ANYWHERE") ? "set" : "(unset)");
  return 0;
}
