//go:build linux && cgo

// cshim.c: the C helpers of package rdmacore (see cshim.h). Functions
// return 0 or a positive errno; those returning a pointer store the errno
// in *err when they return NULL.

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "cshim.h"

// The Go side uses these values as numbers (status.go, post.go, conn.go):
// check them against the headers it is built with.
_Static_assert(IBV_WC_SUCCESS == 0, "ibv_wc_status");
_Static_assert(IBV_WC_LOC_LEN_ERR == 1, "ibv_wc_status");
_Static_assert(IBV_WC_LOC_QP_OP_ERR == 2, "ibv_wc_status");
_Static_assert(IBV_WC_LOC_PROT_ERR == 4, "ibv_wc_status");
_Static_assert(IBV_WC_WR_FLUSH_ERR == 5, "ibv_wc_status");
_Static_assert(IBV_WC_MW_BIND_ERR == 6, "ibv_wc_status");
_Static_assert(IBV_WC_BAD_RESP_ERR == 7, "ibv_wc_status");
_Static_assert(IBV_WC_LOC_ACCESS_ERR == 8, "ibv_wc_status");
_Static_assert(IBV_WC_REM_INV_REQ_ERR == 9, "ibv_wc_status");
_Static_assert(IBV_WC_REM_ACCESS_ERR == 10, "ibv_wc_status");
_Static_assert(IBV_WC_REM_OP_ERR == 11, "ibv_wc_status");
_Static_assert(IBV_WC_RETRY_EXC_ERR == 12, "ibv_wc_status");
_Static_assert(IBV_WC_RNR_RETRY_EXC_ERR == 13, "ibv_wc_status");
_Static_assert(IBV_WC_REM_INV_RD_REQ_ERR == 15, "ibv_wc_status");
_Static_assert(IBV_WC_REM_ABORT_ERR == 16, "ibv_wc_status");
_Static_assert(IBV_WC_FATAL_ERR == 19, "ibv_wc_status");
_Static_assert(IBV_WC_RESP_TIMEOUT_ERR == 20, "ibv_wc_status");
_Static_assert(IBV_WC_GENERAL_ERR == 21, "ibv_wc_status");
_Static_assert(IBV_WC_WITH_INV == 8 && IBV_WC_IP_CSUM_OK == 4, "ibv_wc_flags");
_Static_assert(IBV_WR_RDMA_WRITE == 0 && IBV_WR_SEND == 2 && IBV_WR_RDMA_READ == 4 &&
	       IBV_WR_LOCAL_INV == 7 && IBV_WR_BIND_MW == 8 && IBV_WR_SEND_WITH_INV == 9, "ibv_wr_opcode");
_Static_assert(IBV_ACCESS_REMOTE_WRITE == 2 && IBV_ACCESS_REMOTE_READ == 4, "ibv_access_flags");
_Static_assert(RDMA_CM_EVENT_ADDR_RESOLVED == 0 && RDMA_CM_EVENT_ADDR_ERROR == 1 &&
	       RDMA_CM_EVENT_ROUTE_RESOLVED == 2 && RDMA_CM_EVENT_ROUTE_ERROR == 3 &&
	       RDMA_CM_EVENT_CONNECT_REQUEST == 4 && RDMA_CM_EVENT_CONNECT_RESPONSE == 5 &&
	       RDMA_CM_EVENT_CONNECT_ERROR == 6 && RDMA_CM_EVENT_UNREACHABLE == 7 &&
	       RDMA_CM_EVENT_REJECTED == 8 && RDMA_CM_EVENT_ESTABLISHED == 9 &&
	       RDMA_CM_EVENT_DISCONNECTED == 10 && RDMA_CM_EVENT_DEVICE_REMOVAL == 11 &&
	       RDMA_CM_EVENT_ADDR_CHANGE == 14 && RDMA_CM_EVENT_TIMEWAIT_EXIT == 15, "rdma_cm_event_type");

// errno_or returns errno, or fallback if errno is 0 (a library that failed
// without setting it).
static int errno_or(int fallback)
{
	return errno ? errno : fallback;
}

struct rdma_event_channel *rc_create_event_channel(int *err)
{
	errno = 0;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	if (!ch)
		*err = errno_or(ENODEV);
	return ch;
}

int rc_get_event(struct rdma_event_channel *ch, struct rc_event *out)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		return errno_or(EIO);
	memset(out, 0, sizeof *out);
	out->id = ev->id;
	out->key = (uint64_t)(uintptr_t)ev->id->context;
	out->type = ev->event;
	out->status = ev->status;
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		out->responder_resources = ev->param.conn.responder_resources;
		out->initiator_depth = ev->param.conn.initiator_depth;
		if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
			out->private_data_len = ev->param.conn.private_data_len;
			memcpy(out->private_data, ev->param.conn.private_data, out->private_data_len);
		}
		break;
	default:
		break;
	}
	// Acknowledged at once: rdma_destroy_id waits for the acknowledgement
	// of every event of its id, and nothing else holds the event.
	rdma_ack_cm_event(ev);
	return 0;
}

int rc_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, uint64_t key)
{
	if (rdma_create_id(ch, id, (void *)(uintptr_t)key, RDMA_PS_TCP))
		return errno_or(EIO);
	return 0;
}

void rc_set_key(struct rdma_cm_id *id, uint64_t key)
{
	id->context = (void *)(uintptr_t)key;
}

int rc_dup_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno_or(EBADF);
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (d < 0)
		return -errno_or(EMFILE);
	return d;
}

static int fill_sockaddr(struct sockaddr_storage *ss, const uint8_t *ip, int ip_len, uint16_t port)
{
	memset(ss, 0, sizeof *ss);
	if (ip_len == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;
		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		memcpy(&s->sin_addr, ip, 4);
		return 0;
	}
	if (ip_len == 16) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
		s->sin6_family = AF_INET6;
		s->sin6_port = htons(port);
		memcpy(&s->sin6_addr, ip, 16);
		return 0;
	}
	return EAFNOSUPPORT;
}

static int read_sockaddr(const struct sockaddr *sa, uint8_t ip[16], uint16_t *port)
{
	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
		memcpy(ip, &s->sin_addr, 4);
		*port = ntohs(s->sin_port);
		return 4;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
		memcpy(ip, &s->sin6_addr, 16);
		*port = ntohs(s->sin6_port);
		return 16;
	}
	return 0;
}

int rc_bind_addr(struct rdma_cm_id *id, const uint8_t *ip, int ip_len, uint16_t port)
{
	struct sockaddr_storage ss;
	int ret = fill_sockaddr(&ss, ip, ip_len, port);
	if (ret)
		return ret;
	if (rdma_bind_addr(id, (struct sockaddr *)&ss))
		return errno_or(EIO);
	return 0;
}

int rc_resolve_addr(struct rdma_cm_id *id, const uint8_t *src, int src_len,
		    const uint8_t *dst, int dst_len, uint16_t port, int timeout_ms)
{
	struct sockaddr_storage s, d;
	int ret = fill_sockaddr(&d, dst, dst_len, port);
	if (ret)
		return ret;
	if (src_len) {
		ret = fill_sockaddr(&s, src, src_len, 0);
		if (ret)
			return ret;
	}
	if (rdma_resolve_addr(id, src_len ? (struct sockaddr *)&s : NULL, (struct sockaddr *)&d, timeout_ms))
		return errno_or(EIO);
	return 0;
}

int rc_local_addr(struct rdma_cm_id *id, uint8_t ip[16], uint16_t *port)
{
	return read_sockaddr(rdma_get_local_addr(id), ip, port);
}

int rc_peer_addr(struct rdma_cm_id *id, uint8_t ip[16], uint16_t *port)
{
	return read_sockaddr(rdma_get_peer_addr(id), ip, port);
}

int rc_listen(struct rdma_cm_id *id, int backlog)
{
	return rdma_listen(id, backlog) ? errno_or(EIO) : 0;
}

int rc_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	return rdma_resolve_route(id, timeout_ms) ? errno_or(EIO) : 0;
}

// conn_param fills the parameters both sides send. retry_count 6: rxe takes
// 7 as "retry forever" and would never notice a dead peer. rnr_retry_count
// 0: a Send that finds no Receive fails at once (what the Linux RPC-over-RDMA
// client asks for); the value applies to the peer's queue pair.
static void conn_param(struct rdma_conn_param *p, const void *pd, int pd_len,
		       int responder_resources, int initiator_depth)
{
	memset(p, 0, sizeof *p);
	p->private_data = pd_len ? pd : NULL;
	p->private_data_len = (uint8_t)pd_len;
	p->responder_resources = (uint8_t)responder_resources;
	p->initiator_depth = (uint8_t)initiator_depth;
	p->flow_control = 1;
	p->retry_count = 6;
	p->rnr_retry_count = 0;
}

int rc_connect(struct rdma_cm_id *id, const void *pd, int pd_len, int responder_resources, int initiator_depth)
{
	struct rdma_conn_param p;
	conn_param(&p, pd, pd_len, responder_resources, initiator_depth);
	return rdma_connect(id, &p) ? errno_or(EIO) : 0;
}

int rc_accept(struct rdma_cm_id *id, const void *pd, int pd_len, int responder_resources, int initiator_depth)
{
	struct rdma_conn_param p;
	conn_param(&p, pd, pd_len, responder_resources, initiator_depth);
	return rdma_accept(id, &p) ? errno_or(EIO) : 0;
}

int rc_reject(struct rdma_cm_id *id, const void *pd, int pd_len)
{
	return rdma_reject(id, pd_len ? pd : NULL, (uint8_t)pd_len) ? errno_or(EIO) : 0;
}

int rc_disconnect(struct rdma_cm_id *id)
{
	return rdma_disconnect(id) ? errno_or(EIO) : 0;
}

int rc_destroy_id(struct rdma_cm_id *id)
{
	return rdma_destroy_id(id) ? errno_or(EIO) : 0;
}

struct ibv_context *rc_id_verbs(struct rdma_cm_id *id)
{
	return id->verbs;
}

struct ibv_qp *rc_id_qp(struct rdma_cm_id *id)
{
	return id->qp;
}

int rc_query_device(struct ibv_context *ctx, struct rc_devattr *out)
{
	struct ibv_device_attr a;
	int ret = ibv_query_device(ctx, &a);
	if (ret)
		return ret > 0 ? ret : errno_or(EIO);
	out->max_qp_wr = a.max_qp_wr;
	out->max_sge = a.max_sge;
	out->max_sge_rd = a.max_sge_rd;
	out->max_cqe = a.max_cqe;
	out->max_qp_rd_atom = a.max_qp_rd_atom;
	out->max_qp_init_rd_atom = a.max_qp_init_rd_atom;
	out->vendor_id = a.vendor_id;
	return 0;
}

struct ibv_pd *rc_alloc_pd(struct ibv_context *ctx, int *err)
{
	errno = 0;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd)
		*err = errno_or(ENOMEM);
	return pd;
}

int rc_dealloc_pd(struct ibv_pd *pd)
{
	return ibv_dealloc_pd(pd);
}

struct ibv_comp_channel *rc_create_comp_channel(struct ibv_context *ctx, int *err)
{
	errno = 0;
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	if (!ch)
		*err = errno_or(ENOMEM);
	return ch;
}

int rc_comp_channel_fd(struct ibv_comp_channel *ch)
{
	return ch->fd;
}

int rc_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	return ibv_destroy_comp_channel(ch);
}

struct ibv_cq *rc_create_cq(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *ch, int *err)
{
	errno = 0;
	struct ibv_cq *cq = ibv_create_cq(ctx, cqe, NULL, ch, 0);
	if (!cq)
		*err = errno_or(ENOMEM);
	return cq;
}

int rc_destroy_cq(struct ibv_cq *cq)
{
	return ibv_destroy_cq(cq);
}

int rc_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *cq,
		 int send_wr, int recv_wr, int max_sge)
{
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof a);
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = 1;
	a.cap.max_send_wr = send_wr;
	a.cap.max_recv_wr = recv_wr;
	a.cap.max_send_sge = max_sge;
	a.cap.max_recv_sge = max_sge;
	return rdma_create_qp(id, pd, &a) ? errno_or(EIO) : 0;
}

void rc_destroy_qp(struct rdma_cm_id *id)
{
	if (id->qp)
		rdma_destroy_qp(id);
}

struct ibv_mr *rc_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int *err)
{
	errno = 0;
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	if (!mr)
		*err = errno_or(ENOMEM);
	return mr;
}

int rc_dereg_mr(struct ibv_mr *mr)
{
	return ibv_dereg_mr(mr);
}

uint32_t rc_mr_lkey(struct ibv_mr *mr)
{
	return mr->lkey;
}

struct ibv_mw *rc_alloc_mw(struct ibv_pd *pd, int *err)
{
	errno = 0;
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	if (!mw)
		*err = errno_or(EOPNOTSUPP);
	return mw;
}

int rc_dealloc_mw(struct ibv_mw *mw)
{
	return ibv_dealloc_mw(mw);
}

uint32_t rc_mw_rkey(struct ibv_mw *mw)
{
	return mw->rkey;
}

// post_result packs the outcome of a post: the errno in the high 32 bits,
// the number of work requests posted in the low 32 (no pointer to an
// output variable, which would make cgo move it to the Go heap).
static int64_t post_result(int ret, int posted)
{
	if (ret < 0)
		ret = -ret;
	return (int64_t)ret << 32 | (uint32_t)posted;
}

// rc_post_send posts n work requests. rxe builds a bind's WQE with the
// window's current rkey as user space knows it (ibv_mw.rkey) and fails the
// bind unless the kernel's window still has that rkey; nothing in
// libibverbs updates ibv_mw.rkey for a bind posted with ibv_post_send. So
// the chain is posted in segments that end with a bind, and after each
// one ibv_mw.rkey becomes the rkey that bind gives.
int64_t rc_post_send(struct ibv_qp *qp, struct rc_wr *in, struct ibv_send_wr *wr,
		     struct ibv_sge *sge, int n)
{
	for (int i = 0; i < n; i++) {
		const struct rc_wr *s = &in[i];
		struct ibv_send_wr *w = &wr[i];
		memset(w, 0, sizeof *w);
		w->wr_id = s->wr_id;
		w->next = i + 1 < n ? &wr[i + 1] : NULL;
		w->sg_list = s->num_sge ? &sge[s->sge_index] : NULL;
		w->num_sge = (int)s->num_sge;
		w->opcode = (enum ibv_wr_opcode)s->opcode;
		w->send_flags = IBV_SEND_SIGNALED;
		switch (s->opcode) {
		case IBV_WR_SEND_WITH_INV:
		case IBV_WR_LOCAL_INV:
			w->invalidate_rkey = s->invalidate_rkey;
			break;
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_READ:
			w->wr.rdma.remote_addr = s->remote_addr;
			w->wr.rdma.rkey = s->rkey;
			break;
		case IBV_WR_BIND_MW:
			w->bind_mw.mw = s->mw;
			w->bind_mw.rkey = s->rkey;
			w->bind_mw.bind_info.mr = s->mr;
			w->bind_mw.bind_info.addr = s->remote_addr;
			w->bind_mw.bind_info.length = s->length;
			w->bind_mw.bind_info.mw_access_flags = s->access;
			break;
		default:
			break;
		}
	}
	int start = 0;
	while (start < n) {
		int last = start;
		while (last < n - 1 && in[last].opcode != IBV_WR_BIND_MW)
			last++;
		wr[last].next = NULL;
		struct ibv_send_wr *badwr = NULL;
		int ret = ibv_post_send(qp, &wr[start], &badwr);
		if (ret)
			return post_result(ret, badwr ? (int)(badwr - wr) : start);
		if (in[last].opcode == IBV_WR_BIND_MW)
			in[last].mw->rkey = in[last].rkey;
		start = last + 1;
	}
	return post_result(0, n);
}

int64_t rc_post_recv(struct ibv_qp *qp, const struct rc_rwr *in, struct ibv_recv_wr *wr,
		     struct ibv_sge *sge, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_recv_wr *w = &wr[i];
		w->wr_id = in[i].wr_id;
		w->next = i + 1 < n ? &wr[i + 1] : NULL;
		w->sg_list = in[i].num_sge ? &sge[in[i].sge_index] : NULL;
		w->num_sge = (int)in[i].num_sge;
	}
	struct ibv_recv_wr *badwr = NULL;
	int ret = ibv_post_recv(qp, wr, &badwr);
	return post_result(ret, ret ? (badwr ? (int)(badwr - wr) : 0) : n);
}

int rc_poll(struct ibv_cq *cq, struct ibv_wc *wc, struct rc_wc *out, int n)
{
	int got = ibv_poll_cq(cq, n, wc);
	for (int i = 0; i < got; i++) {
		out[i].wr_id = wc[i].wr_id;
		out[i].status = wc[i].status;
		out[i].opcode = wc[i].opcode;
		out[i].byte_len = wc[i].byte_len;
		out[i].flags = wc[i].wc_flags;
		out[i].invalidated_rkey = wc[i].invalidated_rkey;
		out[i].vendor_err = wc[i].vendor_err;
	}
	return got;
}

int rc_req_notify(struct ibv_cq *cq)
{
	return ibv_req_notify_cq(cq, 0);
}

int rc_get_cq_event(struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq;
	void *ctx;
	if (ibv_get_cq_event(ch, &cq, &ctx))
		return errno_or(EIO);
	ibv_ack_cq_events(cq, 1);
	return 0;
}

// half_open_event waits on ch for the next event, which must be want.
static int half_open_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev))
		return errno_or(EIO);
	int ok = ev->event == want && ev->status == 0;
	int status = ev->status;
	rdma_ack_cm_event(ev);
	if (!ok)
		return status < 0 ? -status : ECONNREFUSED;
	return 0;
}

int rc_half_open(struct rdma_event_channel **chp, struct rdma_cm_id **idp,
		 const uint8_t *src, int src_len, const uint8_t *dst, int dst_len, uint16_t port,
		 const void *pd, int pd_len, uint32_t qp_num, int timeout_ms)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL;
	struct rdma_conn_param p;
	int ret;
	if (!ch)
		return errno_or(ENODEV);
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		ret = errno_or(EIO);
		rdma_destroy_event_channel(ch);
		return ret;
	}
	ret = rc_resolve_addr(id, src, src_len, dst, dst_len, port, timeout_ms);
	if (!ret)
		ret = half_open_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (!ret)
		ret = rc_resolve_route(id, timeout_ms);
	if (!ret)
		ret = half_open_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (!ret) {
		// No queue pair: librdmacm sends the REQ with qp_num and
		// leaves the REP to the caller (RDMA_CM_EVENT_CONNECT_RESPONSE,
		// then rdma_establish), which never answers it.
		conn_param(&p, pd, pd_len, 1, 1);
		p.qp_num = qp_num;
		ret = rdma_connect(id, &p) ? errno_or(EIO) : 0;
	}
	if (ret) {
		rdma_destroy_id(id);
		rdma_destroy_event_channel(ch);
		return ret;
	}
	*chp = ch;
	*idp = id;
	return 0;
}

void rc_half_close(struct rdma_event_channel *ch, struct rdma_cm_id *id)
{
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}
