/* A stand-in for libibverbs.so.1 with no devices, built in three variants
 * for the loader test: current (with ibv_reg_dmabuf_mr), old (rdma-core
 * before v34: without it) and broken (a required entry point missing).
 * Only the loader's dlsym matters; the few functions a test may call
 * behave like a library that finds no HCA. */
#include <stddef.h>

void** ibv_get_device_list(int* num) {
  if (num) *num = 0;
  return NULL;
}
void ibv_free_device_list(void** list) { (void)list; }
const char* ibv_get_device_name(void* dev) { (void)dev; return "fake0"; }
void* ibv_open_device(void* dev) { (void)dev; return NULL; }
int ibv_close_device(void* ctx) { (void)ctx; return 0; }
int ibv_query_device(void* ctx, void* attr) { (void)ctx; (void)attr; return -1; }
int ibv_query_port(void* ctx, unsigned char port, void* attr) { (void)ctx; (void)port; (void)attr; return -1; }
int ibv_query_gid(void* ctx, unsigned char port, int index, void* gid) {
  (void)ctx; (void)port; (void)index; (void)gid;
  return -1;
}
void* ibv_alloc_pd(void* ctx) { (void)ctx; return NULL; }
int ibv_dealloc_pd(void* pd) { (void)pd; return 0; }
void* ibv_reg_mr(void* pd, void* addr, size_t length, int access) {
  (void)pd; (void)addr; (void)length; (void)access;
  return NULL;
}
int ibv_dereg_mr(void* mr) { (void)mr; return 0; }
void* ibv_create_cq(void* ctx, int cqe, void* cq_context, void* channel, int vector) {
  (void)ctx; (void)cqe; (void)cq_context; (void)channel; (void)vector;
  return NULL;
}
int ibv_destroy_cq(void* cq) { (void)cq; return 0; }
void* ibv_create_qp(void* pd, void* attr) { (void)pd; (void)attr; return NULL; }
#ifndef FAKE_VERBS_BROKEN
int ibv_modify_qp(void* qp, void* attr, int mask) { (void)qp; (void)attr; (void)mask; return -1; }
#endif
int ibv_destroy_qp(void* qp) { (void)qp; return 0; }
const char* ibv_wc_status_str(int status) { (void)status; return "fake"; }
const char* ibv_port_state_str(int state) { (void)state; return "fake"; }
#ifdef FAKE_VERBS_DMABUF
void* ibv_reg_dmabuf_mr(void* pd, unsigned long long offset, size_t length, unsigned long long iova, int fd,
                        int access) {
  (void)pd; (void)offset; (void)length; (void)iova; (void)fd; (void)access;
  return NULL;
}
#endif
