// Device code for the direct load/launch test: one SPMD kernel with a
// single pointer argument, and one `declare target` global.
#pragma omp declare target
int table[4] = {10, 20, 30, 40};
#pragma omp end declare target

void fill(int *p) {
#pragma omp target teams distribute parallel for map(from : p[0:256])
  for (int i = 0; i < 256; i++) p[i] = 3 * i + table[i % 4];
}

int main(void) {
  int p[256];
  fill(p);
  return p[1] != 23;
}
