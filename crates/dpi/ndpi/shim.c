/* The few nDPI calls rampart's optional backend needs, behind a flat interface: the flow
   struct's size and the bitmask macro exist only in C. Built and linked only with the
   `ndpi` feature (Debian's libndpi-dev, 4.2). */
#include <string.h>
#include <ndpi/ndpi_api.h>

void *rampart_ndpi_new(void) {
  struct ndpi_detection_module_struct *m = ndpi_init_detection_module(ndpi_no_prefs);
  if (m == NULL) return NULL;
  NDPI_PROTOCOL_BITMASK all;
  NDPI_BITMASK_SET_ALL(all);
  ndpi_set_protocol_detection_bitmask2(m, &all);
  ndpi_finalize_initialization(m);
  return m;
}

void rampart_ndpi_free(void *m) { ndpi_exit_detection_module(m); }

void *rampart_ndpi_flow_new(void) {
  void *f = ndpi_flow_malloc(SIZEOF_FLOW_STRUCT);
  if (f != NULL) memset(f, 0, SIZEOF_FLOW_STRUCT);
  return f;
}

void rampart_ndpi_flow_free(void *f) { ndpi_free_flow(f); }

/* One IP packet; returns 1 when detection is over (a label, and nothing more to dissect). */
int rampart_ndpi_packet(void *m, void *f, const unsigned char *p, unsigned short len,
                        unsigned long long ms, unsigned short *master, unsigned short *app) {
  ndpi_protocol r = ndpi_detection_process_packet(m, f, p, len, ms);
  *master = r.master_protocol;
  *app = r.app_protocol;
  return (r.master_protocol != NDPI_PROTOCOL_UNKNOWN || r.app_protocol != NDPI_PROTOCOL_UNKNOWN)
         && !ndpi_extra_dissection_possible(m, f);
}

/* The end of a flow still unknown: nDPI's guess from ports and addresses. */
void rampart_ndpi_giveup(void *m, void *f, unsigned short *master, unsigned short *app) {
  u_int8_t guessed = 0;
  ndpi_protocol r = ndpi_detection_giveup(m, f, 1, &guessed);
  *master = r.master_protocol;
  *app = r.app_protocol;
}

/* `MASTER.APP` as nDPI writes it; returns its length. */
unsigned rampart_ndpi_name(void *m, unsigned short master, unsigned short app, char *buf,
                           unsigned len) {
  ndpi_protocol p;
  memset(&p, 0, sizeof p);
  p.master_protocol = master;
  p.app_protocol = app;
  ndpi_protocol2name(m, p, buf, len);
  return (unsigned)strlen(buf);
}
