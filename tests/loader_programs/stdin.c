/* Reads standard input with fgets (lines, some longer than the buffer) and
 * echoes it with line numbers. */
#include <stdio.h>
#include <string.h>

int main(void) {
  char line[40];
  int n = 0;
  while (fgets(line, sizeof line, stdin)) {
    size_t len = strlen(line);
    printf("%3d (%2zu): %s%s", ++n, len, line,
           len && line[len - 1] == '\n' ? "" : "\\\n");
  }
  printf("end after %d reads\n", n);
  return 0;
}
