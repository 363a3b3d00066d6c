/* png_count: pixel counts inside rectangles of a PNG screenshot, for the
 * report's browser test (tests/cli/test_report_browser.sh). Built by the test
 * itself with `cc png_count.c -lpng`.
 *
 *   png_count FILE.png X Y W H [X Y W H ...]
 *
 * For each rectangle (pixels, clipped to the image) prints one line:
 *   "<pixels> <non_background> <coloured>"
 * non_background: pixels that differ from white (#ffffff, the plot area's
 * fill) by more than 24 in some channel; coloured: pixels whose channels
 * spread by more than 60 (max - min): the palette's marks and lines, not the
 * grey grid, frame or black text. Exit 2 on bad usage or an unreadable PNG. */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 6 || (argc - 2) % 4 != 0) {
    fprintf(stderr, "usage: png_count FILE.png X Y W H [X Y W H ...]\n");
    return 2;
  }
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, argv[1])) {
    fprintf(stderr, "png_count: %s: %s\n", argv[1], img.message);
    return 2;
  }
  img.format = PNG_FORMAT_RGB;
  size_t size = PNG_IMAGE_SIZE(img);
  unsigned char *px = malloc(size);
  if (!px) {
    fprintf(stderr, "png_count: out of memory\n");
    png_image_free(&img);
    return 2;
  }
  if (!png_image_finish_read(&img, NULL, px, 0, NULL)) {
    fprintf(stderr, "png_count: %s: %s\n", argv[1], img.message);
    free(px);
    return 2;
  }
  long w = (long)img.width, h = (long)img.height;
  for (int a = 2; a + 3 < argc; a += 4) {
    long x0 = atol(argv[a]), y0 = atol(argv[a + 1]);
    long x1 = x0 + atol(argv[a + 2]), y1 = y0 + atol(argv[a + 3]);
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > w) x1 = w;
    if (y1 > h) y1 = h;
    long total = 0, nonbg = 0, colored = 0;
    for (long y = y0; y < y1; y++) {
      for (long x = x0; x < x1; x++) {
        const unsigned char *p = px + 3 * ((size_t)y * (size_t)w + (size_t)x);
        int mx = p[0], mn = p[0];
        for (int c = 1; c < 3; c++) {
          if (p[c] > mx) mx = p[c];
          if (p[c] < mn) mn = p[c];
        }
        total++;
        if (255 - mn > 24) nonbg++;
        if (mx - mn > 60) colored++;
      }
    }
    printf("%ld %ld %ld\n", total, nonbg, colored);
  }
  free(px);
  return 0;
}
