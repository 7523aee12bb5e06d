/* Prints one string of argv[1] bytes (default 1 MiB) with printf's %s
 * from one lane. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int size = argc > 1 ? atoi(argv[1]) : 1 << 20;
  if (size < 1)
    size = 1;
  char *text = malloc((size_t)size + 1);
  if (!text)
    return 1;
  for (int i = 0; i < size; ++i)
    text[i] = (char)('a' + i % 26);
  text[size] = 0;
  printf("%s\n", text);
  free(text);
  return 0;
}
