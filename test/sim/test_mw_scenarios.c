/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory windows end to end in the simulator: the responder binds a type 2
 * window over part of a region that itself grants no remote access; the
 * requester WRITEs and READs through the window's R_Key, then invalidates
 * it with a SEND with Invalidate, and its next WRITE is refused with
 * IBV_WC_REM_ACCESS_ERR, the target memory unchanged. The same under loss,
 * go-back-N and selective repeat (where the invalidation must wait for the
 * WRITE before it). Then a type 1 unbind and a LOCAL_INV end the access
 * the same way, an out-of-bounds WRITE lands nothing, and a bind that
 * breaks a rule completes with IBV_WC_MW_BIND_ERR.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "mw.h"

#define PD 1 /* the fixture's */
#define WIN_OFF 4096u
#define WIN_LEN (256u * 1024)
#define MSG (64u * 1024)
#define ROUNDS 8u

static void post(struct fx *f, struct fx_side *s, uint64_t wr_id, enum ur_wr_opcode op,
		 uint32_t local_off, uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	struct ur_send_wqe *w = ur_wq_reserve(ur_qp_sq(s->qp), 0);

	(void)f;
	ck_assert_ptr_nonnull(w);
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->opcode = op;
	w->signaled = 1;
	w->length = len;
	w->remote_addr = raddr;
	w->rkey = rkey;
	w->imm = imm;
	if (len) {
		w->num_sge = 1;
		w->sge[0].addr = (uint64_t)(uintptr_t)(s->buf + local_off);
		w->sge[0].length = len;
		w->sge[0].lkey = s->mr->key;
	}
	ur_wq_commit(ur_qp_sq(s->qp), 1);
	ur_qp_doorbell(s->qp);
	sim_node_kick(s->node);
}

/* A FETCH_ADD of `add` on side s, the original into its buffer at `local_off`. */
static void post_fetch_add(struct fx *f, struct fx_side *s, uint64_t wr_id, uint32_t local_off,
			   uint64_t raddr, uint32_t rkey, uint64_t add)
{
	struct ur_send_wqe *w = ur_wq_reserve(ur_qp_sq(s->qp), 0);

	(void)f;
	ck_assert_ptr_nonnull(w);
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->opcode = UR_WR_ATOMIC_FETCH_AND_ADD;
	w->signaled = 1;
	w->length = 8;
	w->remote_addr = raddr;
	w->rkey = rkey;
	w->compare_add = add;
	w->num_sge = 1;
	w->sge[0].addr = (uint64_t)(uintptr_t)(s->buf + local_off);
	w->sge[0].length = 8;
	w->sge[0].lkey = s->mr->key;
	ur_wq_commit(ur_qp_sq(s->qp), 1);
	ur_qp_doorbell(s->qp);
	sim_node_kick(s->node);
}

/* A BIND_MW on side s: window `mw` over [off, off+len) of its buffer, region `lkey`. */
static void post_bind(struct fx *f, struct fx_side *s, uint64_t wr_id, struct ur_mr *mw,
		      uint32_t new_key, uint32_t lkey, uint32_t off, uint64_t len, uint32_t access)
{
	struct ur_send_wqe *w = ur_wq_reserve(ur_qp_sq(s->qp), 0);

	(void)f;
	ck_assert_ptr_nonnull(w);
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->opcode = UR_WR_BIND_MW;
	w->signaled = 1;
	w->imm = mw->key;
	w->rkey = new_key;
	w->remote_addr = (uint64_t)(uintptr_t)(s->buf + off);
	w->bind_length = len;
	w->bind_lkey = lkey;
	w->bind_access = access;
	ur_wq_commit(ur_qp_sq(s->qp), 1);
	ur_qp_doorbell(s->qp);
	sim_node_kick(s->node);
}

static uint32_t next_key(uint32_t key)
{
	return (key & ~UR_MW_KEY_MASK) | ((key + 1) & UR_MW_KEY_MASK);
}

static uint64_t ctr(struct fx_side *s, enum ur_counter c)
{
	return ur_dev_counters(sim_node_dev(s->node))[c];
}

static uint8_t pat(uint32_t i, unsigned salt)
{
	return (uint8_t)(i * 31 + salt * 101 + (i >> 9));
}

static void fill(uint8_t *p, uint32_t n, unsigned salt)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = pat(i, salt);
}

/* The responder's region grants no remote access: only a window can. */
#define REGION_B (UR_ACCESS_LOCAL_WRITE | UR_ACCESS_MW_BIND)
#define WIN_RW (UR_ACCESS_REMOTE_READ | UR_ACCESS_REMOTE_WRITE)
#define WIN_RWA (WIN_RW | UR_ACCESS_REMOTE_ATOMIC)

/* A type 2 window bound by B's QP over B's buffer [WIN_OFF, WIN_OFF+WIN_LEN). */
static struct ur_mr *bind_window(struct fx *f, unsigned kind, uint32_t access)
{
	struct ur_mr *mw = NULL;
	struct ur_cqe c;

	ck_assert_int_eq(ur_dev_alloc_mw(sim_node_dev(f->b.node), kind, PD, &mw), 0);
	post_bind(f, &f->b, 100, mw, next_key(mw->key), f->b.mr->key, WIN_OFF, WIN_LEN, access);
	ck_assert_int_eq(fx_wait(f, &f->b, &c, 1, SIM_PS_PER_S), 1);
	ck_assert_uint_eq(c.status, UR_WC_SUCCESS);
	ck_assert_uint_eq(c.opcode, UR_WC_BIND_MW);
	ck_assert_uint_eq(c.wr_id, 100);
	ck_assert(mw->valid);
	return mw;
}

/* The requester's WRITE through `rkey` is refused, and nothing lands. */
static void write_refused(struct fx *f, uint32_t rkey, uint32_t off, uint32_t len)
{
	uint8_t *before = malloc(WIN_LEN);
	struct ur_cqe c;

	ck_assert_ptr_nonnull(before);
	memcpy(before, f->b.buf + WIN_OFF, WIN_LEN);
	fill(f->a.buf + 2 * MSG, len, 9);
	post(f, &f->a, 50, UR_WR_RDMA_WRITE, 2 * MSG, len,
	     (uint64_t)(uintptr_t)(f->b.buf + WIN_OFF + off), rkey, 0);
	ck_assert_int_eq(fx_wait(f, &f->a, &c, 1, SIM_PS_PER_S), 1);
	ck_assert_uint_eq(c.wr_id, 50);
	ck_assert_uint_eq(c.status, UR_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(ur_qp_state(f->a.qp), UR_QPS_ERR);
	ck_assert_int_eq(memcmp(before, f->b.buf + WIN_OFF, WIN_LEN), 0);
	ck_assert_uint_ge(ctr(&f->b, UR_CTR_resp_remote_access_errors), 1);
	ck_assert_uint_ge(ctr(&f->b, UR_CTR_resp_mw_refused), 1);
	free(before);
}

enum { LOSSLESS, GBN_LOSS, SR_LOSS, NVARIANTS };

START_TEST(test_write_read_invalidate_then_refused)
{
	struct sim_link_cfg link;
	struct ur_dev_config cfg;
	struct ur_cqe c[2];
	struct ur_mr *mw;
	struct fx f;
	uint64_t win, orig, now;
	uint32_t key = 0;

	fx_default_link(&link);
	if (_i != LOSSLESS)
		link.impair.loss = 0.05;
	ur_dev_config_default(&cfg);
	if (_i == SR_LOSS)
		cfg.retx_mode = UR_RETX_SR;
	fx_init_cfg(&f, 23 + (uint64_t)_i, &cfg, &link, NULL, REGION_B);
	fill(f.b.buf, FX_BUF, 1);
	mw = bind_window(&f, UR_KEY_MW2, WIN_RWA);
	win = (uint64_t)(uintptr_t)(f.b.buf + WIN_OFF);
	for (unsigned round = 0; round < ROUNDS; round++) {
		if (round) {
			/* invalidated: free to bind again, with the next key */
			post_bind(&f, &f.b, 100, mw, next_key(mw->key), f.b.mr->key, WIN_OFF,
				  WIN_LEN, WIN_RWA);
			ck_assert_int_eq(fx_wait(&f, &f.b, c, 1, SIM_PS_PER_S), 1);
			ck_assert_uint_eq(c[0].status, UR_WC_SUCCESS);
			ck_assert_uint_ne(mw->key, key);
		}
		key = mw->key;
		/* the region's own key grants nothing remote; the window's does */
		post(&f, &f.a, 1, UR_WR_RDMA_READ, MSG, 4096, win + 8192, key, 0);
		ck_assert_int_eq(fx_wait(&f, &f.a, c, 1, 5 * SIM_PS_PER_S), 1);
		ck_assert_uint_eq(c[0].status, UR_WC_SUCCESS);
		ck_assert_int_eq(memcmp(f.a.buf + MSG, f.b.buf + WIN_OFF + 8192, 4096), 0);
		/* an atomic through the window: the original comes back, the sum lands */
		memcpy(&orig, f.b.buf + WIN_OFF + 64, 8);
		post_fetch_add(&f, &f.a, 4, 3 * MSG, win + 64, key, round + 1);
		ck_assert_int_eq(fx_wait(&f, &f.a, c, 1, 5 * SIM_PS_PER_S), 1);
		ck_assert_uint_eq(c[0].status, UR_WC_SUCCESS);
		ck_assert_int_eq(memcmp(f.a.buf + 3 * MSG, &orig, 8), 0);
		memcpy(&now, f.b.buf + WIN_OFF + 64, 8);
		ck_assert_uint_eq(now, orig + round + 1);

		/* a WRITE, then a SEND with Invalidate right behind it */
		fill(f.a.buf, MSG, 2 + round);
		fx_post_recv(&f, &f.b, 7, 0, 64);
		post(&f, &f.a, 2, UR_WR_RDMA_WRITE, 0, MSG, win + 4096, key, 0);
		post(&f, &f.a, 3, UR_WR_SEND_WITH_INV, 0, 32, 0, 0, key);
		ck_assert_int_eq(fx_wait(&f, &f.a, c, 2, 5 * SIM_PS_PER_S), 2);
		ck_assert_uint_eq(c[0].wr_id, 2);
		ck_assert_uint_eq(c[0].status, UR_WC_SUCCESS);
		ck_assert_uint_eq(c[1].wr_id, 3);
		ck_assert_uint_eq(c[1].status, UR_WC_SUCCESS);
		ck_assert_uint_eq(c[1].opcode, UR_WC_SEND);
		ck_assert_int_eq(memcmp(f.b.buf + WIN_OFF + 4096, f.a.buf, MSG), 0);
		ck_assert_int_eq(fx_wait(&f, &f.b, c, 1, SIM_PS_PER_S), 1);
		ck_assert_uint_eq(c[0].wr_id, 7);
		ck_assert_uint_eq(c[0].status, UR_WC_SUCCESS);
		ck_assert_uint_eq(c[0].opcode, UR_WC_RECV);
		ck_assert_uint_eq(c[0].wc_flags & UR_WC_WITH_INV, UR_WC_WITH_INV);
		ck_assert_uint_eq(c[0].imm, key);
		ck_assert_uint_eq(c[0].byte_len, 32);
		ck_assert(!mw->valid);
	}
	ck_assert_uint_eq(ctr(&f.b, UR_CTR_mw_binds), ROUNDS);
	ck_assert_uint_eq(ctr(&f.b, UR_CTR_mw_invalidations), ROUNDS);
	ck_assert_uint_eq(ctr(&f.b, UR_CTR_resp_mw_refused), 0);
	ck_assert_int_eq(ur_qp_selective(f.a.qp), _i == SR_LOSS);
	if (_i != LOSSLESS)
		ck_assert_uint_gt(ctr(&f.a, UR_CTR_retransmitted_packets), 0);
	/* selective repeat held some invalidations back until the WRITE before them was whole */
	ck_assert_int_eq(ctr(&f.b, UR_CTR_rx_drop_sr_early_invalidate) > 0, _i == SR_LOSS);

	/* the last key and every earlier one stay refused */
	write_refused(&f, key, 0, 64);
	ck_assert_uint_eq(ctr(&f.b, UR_CTR_resp_mw_refused), 1);
	fx_fini(&f);
}
END_TEST

/* A type 1 window unbound (length 0), or a type 2 window LOCAL_INV'd, by the responder. */
START_TEST(test_local_unbind_or_invalidate)
{
	struct sim_link_cfg link;
	struct ur_cqe c;
	struct ur_mr *mw;
	struct fx f;
	uint32_t key;

	fx_default_link(&link);
	fx_init(&f, 31, &link, NULL, REGION_B);
	mw = bind_window(&f, _i ? UR_KEY_MW2 : UR_KEY_MW1, WIN_RW);
	key = mw->key;
	post(&f, &f.a, 1, UR_WR_RDMA_WRITE, 0, 128, (uint64_t)(uintptr_t)(f.b.buf + WIN_OFF), key,
	     0);
	ck_assert_int_eq(fx_wait(&f, &f.a, &c, 1, SIM_PS_PER_S), 1);
	ck_assert_uint_eq(c.status, UR_WC_SUCCESS);
	if (_i) {
		post(&f, &f.b, 101, UR_WR_LOCAL_INV, 0, 0, 0, 0, key);
	} else {
		post_bind(&f, &f.b, 101, mw, next_key(key), 0, 0, 0, 0);
	}
	ck_assert_int_eq(fx_wait(&f, &f.b, &c, 1, SIM_PS_PER_S), 1);
	ck_assert_uint_eq(c.status, UR_WC_SUCCESS);
	ck_assert_uint_eq(c.opcode, _i ? UR_WC_LOCAL_INV : UR_WC_BIND_MW);
	write_refused(&f, key, 0, 64);
	fx_fini(&f);
}
END_TEST

/* Partly inside the window: refused whole (a remote access error, 9.7.5.1.4), not a byte lands. */
START_TEST(test_out_of_bounds_lands_nothing)
{
	struct sim_link_cfg link;
	struct ur_mr *mw;
	struct fx f;

	fx_default_link(&link);
	fx_init(&f, 37, &link, NULL, REGION_B);
	mw = bind_window(&f, UR_KEY_MW2, WIN_RW);
	write_refused(&f, mw->key, WIN_LEN - 32, 64);
	fx_fini(&f);
}
END_TEST

/* A bind the rules refuse (the region lacks MW_BIND, C10-73): MW_BIND_ERR, and RC fails. */
START_TEST(test_bind_error_completes)
{
	struct sim_link_cfg link;
	struct ur_mr *mw = NULL, *plain = NULL;
	struct ur_cqe c[2];
	struct fx f;
	struct ur_dev *dev;

	fx_default_link(&link);
	fx_init(&f, 41, &link, NULL, REGION_B);
	dev = sim_node_dev(f.b.node);
	ck_assert_int_eq(ur_dev_reg_mr(dev, (uint64_t)(uintptr_t)f.b.buf, f.b.buf, 8192,
				       UR_ACCESS_LOCAL_WRITE, PD, &plain),
			 0);
	ck_assert_int_eq(ur_dev_alloc_mw(dev, UR_KEY_MW2, PD, &mw), 0);
	post_bind(&f, &f.b, 102, mw, next_key(mw->key), plain->key, 0, 4096, WIN_RW);
	post(&f, &f.b, 103, UR_WR_SEND, 0, 8, 0, 0, 0);
	ck_assert_int_eq(fx_wait(&f, &f.b, c, 2, SIM_PS_PER_S), 2);
	ck_assert_uint_eq(c[0].wr_id, 102);
	ck_assert_uint_eq(c[0].status, UR_WC_MW_BIND_ERR);
	ck_assert_uint_eq(c[0].opcode, UR_WC_BIND_MW);
	ck_assert_uint_eq(c[1].status, UR_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(ur_qp_state(f.b.qp), UR_QPS_ERR);
	ck_assert(!mw->valid);
	ck_assert_uint_eq(ctr(&f.b, UR_CTR_mw_bind_errors), 1);
	fx_fini(&f);
}
END_TEST

/*
 * UC reaches a window with RDMA WRITE too: through a type 1 window bound
 * by the responder's UC QP, then, unbound, the WRITE is dropped whole (UC
 * has no NAK: the requester completes it, nothing lands).
 */
START_TEST(test_uc_write_through_window)
{
	struct sim_link_cfg link;
	struct ur_cqe c;
	struct ur_mr *mw;
	struct fx f;
	uint64_t win;
	uint8_t *before = malloc(WIN_LEN);
	uint32_t key;

	ck_assert_ptr_nonnull(before);
	fx_default_link(&link);
	fx_init_service(&f, UR_QPT_UC, 47, &link, NULL, REGION_B);
	mw = bind_window(&f, UR_KEY_MW1, WIN_RW);
	key = mw->key;
	win = (uint64_t)(uintptr_t)(f.b.buf + WIN_OFF);
	fill(f.a.buf, 3000, 5);
	post(&f, &f.a, 1, UR_WR_RDMA_WRITE, 0, 3000, win, key, 0);
	ck_assert_int_eq(fx_wait(&f, &f.a, &c, 1, SIM_PS_PER_S), 1);
	ck_assert_uint_eq(c.status, UR_WC_SUCCESS);
	sim_run(f.s, sim_now(f.s) + SIM_PS_PER_S / 1000);
	ck_assert_int_eq(memcmp(f.b.buf + WIN_OFF, f.a.buf, 3000), 0);
	post_bind(&f, &f.b, 101, mw, next_key(key), 0, 0, 0, 0);
	ck_assert_int_eq(fx_wait(&f, &f.b, &c, 1, SIM_PS_PER_S), 1);
	ck_assert_uint_eq(c.status, UR_WC_SUCCESS);
	memcpy(before, f.b.buf + WIN_OFF, WIN_LEN);
	fill(f.a.buf, 3000, 6);
	post(&f, &f.a, 2, UR_WR_RDMA_WRITE, 0, 3000, win, key, 0);
	ck_assert_int_eq(fx_wait(&f, &f.a, &c, 1, SIM_PS_PER_S), 1);
	ck_assert_uint_eq(c.status, UR_WC_SUCCESS);
	sim_run(f.s, sim_now(f.s) + SIM_PS_PER_S / 1000);
	ck_assert_int_eq(memcmp(before, f.b.buf + WIN_OFF, WIN_LEN), 0);
	ck_assert_uint_eq(ctr(&f.b, UR_CTR_resp_mw_refused), 1);
	ck_assert_uint_eq(ctr(&f.b, UR_CTR_rx_drop_uc_message), 1);
	ck_assert_int_eq(ur_qp_state(f.b.qp), UR_QPS_RTS);
	free(before);
	fx_fini(&f);
}
END_TEST

/*
 * Binds and local invalidations among requests that go back N or are
 * resent selectively: the requester alternates WRITE, BIND_MW of its own
 * type 2 window, READ, LOCAL_INV of it, under 5% loss. A bind or an
 * invalidation run twice would fail (a type 2 window cannot be bound while
 * bound, nor invalidated while unbound), so every completion a success, in
 * order, and one bind and one invalidation per round mean each ran once.
 */
START_TEST(test_local_ops_among_retransmissions)
{
	const unsigned rounds = 150, per = 4;
	struct sim_link_cfg link;
	struct ur_dev_config cfg;
	struct ur_mr *region = NULL, *mw = NULL;
	struct ur_dev *dev;
	unsigned posted = 0, done = 0;
	uint32_t key;
	struct fx f;

	fx_default_link(&link);
	link.impair.loss = 0.05;
	ur_dev_config_default(&cfg);
	if (_i)
		cfg.retx_mode = UR_RETX_SR;
	fx_init_cfg(&f, 53 + (uint64_t)_i, &cfg, &link, NULL,
		    UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE | UR_ACCESS_REMOTE_READ);
	dev = sim_node_dev(f.a.node);
	ck_assert_int_eq(ur_dev_reg_mr(dev, (uint64_t)(uintptr_t)(f.a.buf + 0x80000),
				       f.a.buf + 0x80000, 0x10000,
				       UR_ACCESS_LOCAL_WRITE | UR_ACCESS_MW_BIND, PD, &region),
			 0);
	ck_assert_int_eq(ur_dev_alloc_mw(dev, UR_KEY_MW2, PD, &mw), 0);
	key = mw->key;
	while (done < rounds * per) {
		struct ur_cqe c;

		for (; posted < rounds * per && posted - done < 32; posted++) {
			uint64_t raddr = (uint64_t)(uintptr_t)f.b.buf + (posted % 64) * 4096;

			switch (posted % per) {
			case 0:
				post(&f, &f.a, posted, UR_WR_RDMA_WRITE, 0, 3000, raddr,
				     f.b.mr->key, 0);
				break;
			case 1:
				key = next_key(key);
				post_bind(&f, &f.a, posted, mw, key, region->key, 0x80000, 4096,
					  WIN_RW);
				break;
			case 2:
				post(&f, &f.a, posted, UR_WR_RDMA_READ, 0x10000, 5000, raddr,
				     f.b.mr->key, 0);
				break;
			default:
				post(&f, &f.a, posted, UR_WR_LOCAL_INV, 0, 0, 0, 0, key);
				break;
			}
		}
		ck_assert_int_eq(fx_wait(&f, &f.a, &c, 1, 5 * SIM_PS_PER_S), 1);
		ck_assert_msg(c.wr_id == done && c.status == UR_WC_SUCCESS,
			      "wr %llu status %u, want wr %u success", (unsigned long long)c.wr_id,
			      c.status, done);
		done++;
	}
	ck_assert_uint_eq(ctr(&f.a, UR_CTR_mw_binds), rounds);
	ck_assert_uint_eq(ctr(&f.a, UR_CTR_mw_invalidations), rounds);
	ck_assert_uint_gt(ctr(&f.a, UR_CTR_retransmitted_packets), 0);
	ck_assert(!mw->valid);
	fx_fini(&f);
}
END_TEST

static Suite *mw_suite(void)
{
	Suite *s = suite_create("mw_scenarios");
	TCase *tc = tcase_create("windows");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_write_read_invalidate_then_refused, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_local_unbind_or_invalidate, 0, 2);
	tcase_add_test(tc, test_out_of_bounds_lands_nothing);
	tcase_add_test(tc, test_bind_error_completes);
	tcase_add_loop_test(tc, test_local_ops_among_retransmissions, 0, 2);
	tcase_add_test(tc, test_uc_write_through_window);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mw_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
