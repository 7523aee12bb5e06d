// C++ classes that own device work: a class template whose member functions
// contain target regions over `this`'s pointer members, pointer attachment
// when mapping a member array, static members, inheritance without virtual
// calls on the device, and function templates taking functors.
#include <cstdio>
#include <cstdlib>

template <typename T> class Matrix {
public:
  Matrix(int rows, int cols) : rows_(rows), cols_(cols), data_(new T[rows * cols]) {
    for (int i = 0; i < rows * cols; i++)
      data_[i] = T(0);
    ++live;
  }
  ~Matrix() {
    delete[] data_;
    --live;
  }
  Matrix(const Matrix &) = delete;
  Matrix &operator=(const Matrix &) = delete;

  void fill_on_device(T start, T step) {
    T *d = data_;
    int n = rows_ * cols_;
#pragma omp target teams distribute parallel for map(from : d[0:n])
    for (int i = 0; i < n; i++)
      d[i] = start + step * T(i % 50);
  }

  template <typename F> void apply(F f) {
    T *d = data_;
    int n = rows_ * cols_, c = cols_;
#pragma omp target teams distribute parallel for map(tofrom : d[0:n])
    for (int i = 0; i < n; i++)
      d[i] = f(d[i], i / c, i % c);
  }

  T sum_on_device() const {
    T s = T(0);
    const T *d = data_;
    int n = rows_ * cols_;
#pragma omp target teams distribute parallel for map(to : d[0:n]) reduction(+ : s)
    for (int i = 0; i < n; i++)
      s += d[i];
    return s;
  }

  T at(int r, int c) const { return data_[r * cols_ + c]; }
  static int live;

private:
  int rows_, cols_;
  T *data_;
};
template <typename T> int Matrix<T>::live = 0;

struct AddCoords {
  template <typename T> T operator()(T v, int r, int c) const { return v + T(r) - T(2 * c); }
};

struct Shape {
  int sides;
  double unit;
  double perimeter() const { return sides * unit; }
};
struct Square : Shape {
  Square(double u) : Shape{4, u} {}
  double area() const { return unit * unit; }
};

struct Holder {
  int n;
  int *values;
};

int main() {
  {
    Matrix<double> md(30, 40);
    md.fill_on_device(1.5, 0.25);
    md.apply(AddCoords());
    md.apply([](double v, int r, int c) { return r == c ? v * 2.0 : v; });
    Matrix<int> mi(17, 33);
    mi.fill_on_device(-3, 2);
    mi.apply(AddCoords());
    std::printf("matrix<double>: sum=%.2f at(3,3)=%.2f at(29,39)=%.2f live=%d\n", md.sum_on_device(),
                md.at(3, 3), md.at(29, 39), Matrix<double>::live);
    std::printf("matrix<int>: sum=%d at(16,32)=%d live=%d\n", mi.sum_on_device(), mi.at(16, 32),
                Matrix<int>::live);
  }
  std::printf("after scope: live=%d\n", Matrix<double>::live + Matrix<int>::live);

  Square sq[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  double per = 0, area = 0;
#pragma omp target teams distribute parallel for map(to : sq) reduction(+ : per, area)
  for (int i = 0; i < 10; i++) {
    per += sq[i].perimeter();
    area += sq[i].area();
  }
  std::printf("squares: perimeter=%.1f area=%.1f\n", per, area);

  // A struct with a pointer member: map the struct and its pointee (attachment).
  Holder h;
  h.n = 100;
  h.values = (int *)std::malloc(h.n * sizeof(int));
  for (int i = 0; i < h.n; i++)
    h.values[i] = i;
#pragma omp target map(to : h) map(tofrom : h.values[0:h.n])
  for (int i = 0; i < h.n; i++)
    h.values[i] = h.values[i] * h.values[i] - h.n;
  long hs = 0;
  for (int i = 0; i < h.n; i++)
    hs += h.values[i];
  std::printf("holder: sum=%ld v[99]=%d\n", hs, h.values[99]);
  std::free(h.values);
  return 0;
}
