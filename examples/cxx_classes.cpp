// C++ in target regions: classes with constructors and member functions,
// operator overloading, templates instantiated for several types, a functor
// and lambdas, references, and a mapped array of objects.
#include <cstdio>

struct Vec3 {
  double x, y, z;
  Vec3() : x(0), y(0), z(0) {}
  Vec3(double a, double b, double c) : x(a), y(b), z(c) {}
  Vec3 operator+(const Vec3 &o) const { return Vec3(x + o.x, y + o.y, z + o.z); }
  Vec3 operator*(double s) const { return Vec3(x * s, y * s, z * s); }
  double dot(const Vec3 &o) const { return x * o.x + y * o.y + z * o.z; }
};

template <typename T> struct Accumulator {
  T total;
  int count;
  Accumulator() : total(0), count(0) {}
  void add(T v) {
    total += v;
    ++count;
  }
  T mean_times_count() const { return total; }
};

template <typename T> T clamp_to(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }

template <typename T, int N> T poly(const T (&coef)[N], T x) {
  T r = 0;
  for (int i = N - 1; i >= 0; --i)
    r = r * x + coef[i];
  return r;
}

struct Squarer {
  int bias;
  int operator()(int v) const { return v * v + bias; }
};

template <typename T> void scale_all(T *data, int n, T factor) {
#pragma omp target teams distribute parallel for map(tofrom : data[0:n])
  for (int i = 0; i < n; i++)
    data[i] = clamp_to<T>(data[i] * factor, (T)-100, (T)100);
}

int main() {
  const int N = 1000;
  static Vec3 pts[N];
  for (int i = 0; i < N; i++)
    pts[i] = Vec3(i % 5, (i % 7) - 3, 0.5 * (i % 3));
  static double dots[N];
  Vec3 dir(1.0, 2.0, -4.0);

#pragma omp target teams distribute parallel for map(to : pts[0:N]) map(from : dots[0:N])
  for (int i = 0; i < N; i++) {
    Vec3 p = pts[i] + dir * 0.5;
    dots[i] = p.dot(dir);
  }
  double s = 0;
  for (int i = 0; i < N; i++)
    s += dots[i];
  std::printf("vec3: dots[0]=%.3f dots[999]=%.3f sum=%.3f\n", dots[0], dots[N - 1], s);

  int ints[64];
  float floats[64];
  double doubles[64];
  for (int i = 0; i < 64; i++) {
    ints[i] = i * 3 - 90;
    floats[i] = i * 0.5f - 10.0f;
    doubles[i] = i * 2.25 - 50.0;
  }
  scale_all<int>(ints, 64, 3);
  scale_all<float>(floats, 64, 8.0f);
  scale_all<double>(doubles, 64, 2.0);
  long is = 0;
  double fs = 0, ds = 0;
  for (int i = 0; i < 64; i++) {
    is += ints[i];
    fs += floats[i];
    ds += doubles[i];
  }
  std::printf("templates: ints=%ld floats=%.2f doubles=%.2f\n", is, fs, ds);

  long acc_total = 0;
  int acc_count = 0;
  double poly_sum = 0;
  int functor_sum = 0;
#pragma omp target map(tofrom : acc_total, acc_count, poly_sum, functor_sum)
  {
    Accumulator<long> acc;
    Squarer sq{7};
    const double coef[4] = {1.0, -2.0, 0.5, 0.25};
    auto twice = [&](int v) { return sq(v) * 2; };
    for (int i = 0; i < 100; i++) {
      acc.add((long)i * i);
      functor_sum += twice(i % 10);
      poly_sum += poly(coef, (double)(i % 8));
    }
    acc_total = acc.mean_times_count();
    acc_count = acc.count;
  }
  std::printf("objects: acc=%ld count=%d poly=%.3f functor=%d\n", acc_total, acc_count, poly_sum,
              functor_sum);
  return 0;
}
