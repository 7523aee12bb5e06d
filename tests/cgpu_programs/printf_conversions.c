/* printf from one device thread with every conversion and flag; the
 * return values are printed afterwards by the host. Lines starting with
 * "P " hold %p of device addresses (compared by shape only). */
#include <stdio.h>

#define N 40
#pragma omp declare target
const char global_text[] = "declare-target string";
#pragma omp end declare target

int main(void) {
  int ret[N] = {0};
  int pret = 0;
  char mapped[32] = "mapped from the host";
#pragma omp target map(from : ret, pret) map(to : mapped)
  {
    char stack[16];
    for (int i = 0; i < 15; ++i)
      stack[i] = (char)('a' + i);
    stack[15] = 0;
    int k = 0;
    int i = -42;
    unsigned u = 3000000000u;
    long long ll = -1234567890123456789LL;
    unsigned long long ull = 18446744073709551615ULL;
    double d = 3.14159265358979;
    double tiny = 1.5e-300, big = 6.02214076e23;
    short sh = -1234;
    signed char sc = -7;
    long lg = 1L << 40;
    size_t z = 123456789;
    ret[k++] = printf("d=%d i=%i u=%u\n", i, i, u);
    ret[k++] = printf("o=%o x=%x X=%X #o=%#o #x=%#x #X=%#X\n", 511, 48879, 48879,
                      8, 255, 255);
    ret[k++] = printf("c=%c pct=%% c2=[%3c] [%-3c]\n", 'Q', 'w', 'e');
    ret[k++] = printf("lld=%lld llu=%llu llx=%llx\n", ll, ull, ull);
    ret[k++] = printf("hhd=%hhd hd=%hd ld=%ld zu=%zu\n", sc, sh, lg, z);
    ret[k++] = printf("width=[%8d] left=[%-8d] zero=[%08d] plus=[%+d] space=[% d]\n",
                      42, 42, 42, 42, 42);
    ret[k++] = printf("prec=[%.5d] star=[%*d] starprec=[%.*f] both=[%-*.*f]\n", 42, 6,
                      7, 3, d, 12, 2, d);
    ret[k++] = printf("f=%f .0f=%.0f #.0f=%#.0f .10f=%.10f F=%F\n", d, d, d, d, big);
    ret[k++] = printf("e=%e E=%E .2e=%.2e tiny=%e\n", d, big, d, tiny);
    ret[k++] = printf("g=%g G=%G g2=%g g3=%.3g #g=%#g\n", d, big, tiny, 0.0001234, 1.0);
    ret[k++] = printf("a=%a A=%A .3a=%.3a\n", d, big, d);
    ret[k++] = printf("neg=%f %e %g zero=%f %e %g\n", -d, -d, -d, 0.0, 0.0, 0.0);
    ret[k++] = printf("float promoted=%f char promoted=%d\n", 2.5f, 'A');
    ret[k++] = printf("stack=%s global=%s mapped=%s literal=%s\n", stack, global_text,
                      mapped, "literal");
    ret[k++] = printf("s-prec=[%.4s] s-width=[%10s] s-left=[%-10s]|\n", stack, "ab", "cd");
    ret[k++] = printf("many %d %d %d %d %d %d %d %d %d %d %f %s %lld\n", 1, 2, 3, 4, 5, 6,
                      7, 8, 9, 10, 11.0, "twelve", 13LL);
    ret[k++] = printf("no arguments at all\n");
    ret[k++] = printf("");
    ret[k++] = printf("%s%s%s\n", "", stack, "");
    pret = printf("P stack=%p global=%p\n", (void *)stack, (void *)global_text);
    ret[k] = printf("end %d\n", k);
  }
  for (int j = 0; j < N && ret[j] != 0; ++j)
    printf("ret[%d]=%d\n", j, ret[j]);
  printf("pret=%d\n", pret);
  return 0;
}
