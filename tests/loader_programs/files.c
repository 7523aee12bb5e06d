/* Writes a file with every output call, reads it back with fgets and fread,
 * and echoes what it read. argv[1]: the file's path. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs("usage: files PATH\n", stderr);
    return 2;
  }
  FILE *f = fopen(argv[1], "w");
  if (!f) {
    fputs("cannot open for writing\n", stderr);
    return 1;
  }
  fputs("first line from fputs\n", f);
  fprintf(f, "second line: %d %s %.3f\n", 42, "printf", 2.5);
  const char chunk[] = "third line from fwrite\n";
  size_t w = fwrite(chunk, 1, sizeof chunk - 1, f);
  char big[300];
  for (int i = 0; i < 299; ++i)
    big[i] = (char)('a' + i % 26);
  big[299] = '\n';
  size_t w2 = fwrite(big, 1, sizeof big, f);
  fflush(f);
  printf("fwrite returned %zu and %zu, fclose %d\n", w, w2, fclose(f));

  f = fopen(argv[1], "r");
  if (!f) {
    fputs("cannot open for reading\n", stderr);
    return 1;
  }
  char line[128];
  int n = 0;
  while (fgets(line, sizeof line, f))
    printf("fgets %d: %zu bytes: %s", ++n, strlen(line), line);
  printf("\nfgets at end returned NULL after %d lines\n", n);
  fclose(f);

  f = fopen(argv[1], "r");
  char all[1024];
  size_t got = fread(all, 1, sizeof all, f);
  fclose(f);
  printf("fread got %zu bytes, first %.10s, last byte %d\n", got, all,
         (int)all[got - 1]);

  FILE *missing = fopen("/nonexistent-dir/x", "r");
  printf("fopen of a missing file: %s\n", missing ? "opened" : "NULL");
  fputs("stderr via fputs\n", stderr);
  fprintf(stderr, "stderr via fprintf %d\n", 7);
  putchar('P');
  putchar('\n');
  return 0;
}
