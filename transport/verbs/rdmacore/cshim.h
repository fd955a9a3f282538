// cshim.h: the C side of package rdmacore. Every libibverbs and librdmacm
// call of the package goes through these helpers, so that static inline
// verbs (ibv_post_send, ibv_poll_cq, ...), macros (ibv_reg_mr), unions and
// errno stay on the C side, and one cgo call does one batch of work.

#ifndef RDMACORE_CSHIM_H
#define RDMACORE_CSHIM_H

#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

// rc_event is an RDMA-CM event copied out of librdmacm before it is
// acknowledged.
struct rc_event {
	struct rdma_cm_id *id; // the event's id (for CONNECT_REQUEST: the new one)
	uint64_t key;          // id->context: the Go side's handle of the id
	int32_t type;          // enum rdma_cm_event_type
	int32_t status;
	uint8_t responder_resources, initiator_depth;
	uint8_t private_data_len;
	uint8_t private_data[255];
};

// rc_wr is one send work request as the Go side describes it; rc_post_send
// turns a batch of them into chained ibv_send_wr.
struct rc_wr {
	uint64_t wr_id;
	uint64_t remote_addr; // RDMA Read/Write: the peer's address; bind: the start
	uint64_t length;      // bind: the length
	struct ibv_mw *mw;    // bind
	struct ibv_mr *mr;    // bind
	uint32_t opcode;      // enum ibv_wr_opcode
	uint32_t rkey;        // RDMA Read/Write: the peer's rkey; bind: the new rkey
	uint32_t invalidate_rkey;
	uint32_t access;      // bind: mw_access_flags
	uint32_t sge_index;   // first element in the scatter/gather array
	uint32_t num_sge;
};

// rc_rwr is one Receive.
struct rc_rwr {
	uint64_t wr_id;
	uint32_t sge_index;
	uint32_t num_sge;
};

// rc_wc is a completion reduced to what the verbs interface reports.
struct rc_wc {
	uint64_t wr_id;
	uint32_t status;  // enum ibv_wc_status
	uint32_t opcode;  // enum ibv_wc_opcode (valid on success only)
	uint32_t byte_len;
	uint32_t flags;   // wc_flags
	uint32_t invalidated_rkey;
	uint32_t vendor_err;
};

// rc_devattr holds the device limits the provider checks queue sizes against.
struct rc_devattr {
	int32_t max_qp_wr, max_sge, max_sge_rd, max_cqe;
	int32_t max_qp_rd_atom, max_qp_init_rd_atom;
	uint32_t vendor_id;
};

// Event channel.
struct rdma_event_channel *rc_create_event_channel(int *err);
int rc_get_event(struct rdma_event_channel *ch, struct rc_event *out);
int rc_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, uint64_t key);
void rc_set_key(struct rdma_cm_id *id, uint64_t key);
int rc_dup_nonblock(int fd);

// Addresses: ip is 4 or 16 bytes (ip_len), port in host order.
int rc_bind_addr(struct rdma_cm_id *id, const uint8_t *ip, int ip_len, uint16_t port);
int rc_resolve_addr(struct rdma_cm_id *id, const uint8_t *src, int src_len,
		    const uint8_t *dst, int dst_len, uint16_t port, int timeout_ms);
int rc_local_addr(struct rdma_cm_id *id, uint8_t ip[16], uint16_t *port);
int rc_peer_addr(struct rdma_cm_id *id, uint8_t ip[16], uint16_t *port);

// Connection management; each returns 0 or an errno.
int rc_listen(struct rdma_cm_id *id, int backlog);
int rc_resolve_route(struct rdma_cm_id *id, int timeout_ms);
int rc_connect(struct rdma_cm_id *id, const void *pd, int pd_len, int responder_resources, int initiator_depth);
int rc_accept(struct rdma_cm_id *id, const void *pd, int pd_len, int responder_resources, int initiator_depth);
int rc_reject(struct rdma_cm_id *id, const void *pd, int pd_len);

// Half-open connection requests (a test hook): rc_half_open resolves dst
// on a new event channel and sends a REQ naming qp_num, with no queue pair
// behind it, so that the REP is never confirmed; rc_half_close destroys
// both.
int rc_half_open(struct rdma_event_channel **chp, struct rdma_cm_id **idp,
		 const uint8_t *src, int src_len, const uint8_t *dst, int dst_len, uint16_t port,
		 const void *pd, int pd_len, uint32_t qp_num, int timeout_ms);
void rc_half_close(struct rdma_event_channel *ch, struct rdma_cm_id *id);
int rc_disconnect(struct rdma_cm_id *id);
int rc_destroy_id(struct rdma_cm_id *id);
struct ibv_context *rc_id_verbs(struct rdma_cm_id *id);

// Device, protection domain, queues.
int rc_query_device(struct ibv_context *ctx, struct rc_devattr *out);
struct ibv_pd *rc_alloc_pd(struct ibv_context *ctx, int *err);
int rc_dealloc_pd(struct ibv_pd *pd);
struct ibv_comp_channel *rc_create_comp_channel(struct ibv_context *ctx, int *err);
int rc_comp_channel_fd(struct ibv_comp_channel *ch);
int rc_destroy_comp_channel(struct ibv_comp_channel *ch);
struct ibv_cq *rc_create_cq(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *ch, int *err);
int rc_destroy_cq(struct ibv_cq *cq);
int rc_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *cq,
		 int send_wr, int recv_wr, int max_sge);
void rc_destroy_qp(struct rdma_cm_id *id);

// Memory.
struct ibv_mr *rc_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int *err);
int rc_dereg_mr(struct ibv_mr *mr);
uint32_t rc_mr_lkey(struct ibv_mr *mr);
struct ibv_mw *rc_alloc_mw(struct ibv_pd *pd, int *err);
int rc_dealloc_mw(struct ibv_mw *mw);
uint32_t rc_mw_rkey(struct ibv_mw *mw);

// Work requests and completions.
// The posts return errno << 32 | the number of work requests posted.
int64_t rc_post_send(struct ibv_qp *qp, struct rc_wr *in, struct ibv_send_wr *wr,
		     struct ibv_sge *sge, int n);
int64_t rc_post_recv(struct ibv_qp *qp, const struct rc_rwr *in, struct ibv_recv_wr *wr,
		     struct ibv_sge *sge, int n);
struct ibv_qp *rc_id_qp(struct rdma_cm_id *id);
int rc_poll(struct ibv_cq *cq, struct ibv_wc *wc, struct rc_wc *out, int n);
int rc_req_notify(struct ibv_cq *cq);
int rc_get_cq_event(struct ibv_comp_channel *ch);

#endif
