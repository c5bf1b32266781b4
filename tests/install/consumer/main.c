#include <stdio.h>
#include <weft/weft.h>

int main(void) {
  int v = 0;
  if (weftGetVersion(&v) != weftSuccess || v != WEFT_VERSION_CODE) return 1;
  printf("weft %d\n", v);
  return 0;
}
