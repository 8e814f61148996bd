/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs_abi.h - uroce's description of the libibverbs provider interface.
 *
 * libibverbs loads a provider (a shared object named lib<name>-rdmav34.so)
 * and talks to it through a handful of structures and functions that are
 * versioned IBVERBS_PRIVATE_34 in libibverbs.so.1.  rdma-core keeps their
 * definitions in a header it does not install, so this file states them
 * again for the one release we build against: rdma-core v44.0 (Debian 12,
 * package libibverbs1 44.0-2).
 *
 * Only the layout matters to the ABI: member order, member types and the
 * exported function signatures.  Every size and offset asserted below was
 * measured by compiling one layout probe (every member's offset and size,
 * every enum value, the match-table macros) against v44.0's own
 * libibverbs/driver.h and against this file and diffing the output; the
 * function-pointer and function prototypes were checked for type
 * compatibility in a unit that includes both.  If libibverbs ever moves to
 * another IBVERBS_PRIVATE_NN version, this file is wrong by definition: the
 * loader will refuse our provider (the registration symbol carries the
 * number), and the layouts must be measured again.
 *
 * Public types (struct ibv_*, struct verbs_context) come from the installed
 * <infiniband/verbs.h>; nothing here redefines them.
 *
 * Deliberately absent: the ibv_cmd_* helpers, execute_ioctl() and
 * __ioctl_final_num_attrs().  They marshal commands for the kernel's uverbs
 * character device; uroce has no kernel side, and the cdev we hand
 * libibverbs rejects every command, so a provider that called one would
 * only ever see an error.  verbs_init_context() is declared by rdma-core
 * but not exported by libibverbs.so.1 v44, so it is absent as well: use
 * verbs_init_and_alloc_context().
 */
#ifndef UROCE_PROVIDER_VERBS_ABI_H
#define UROCE_PROVIDER_VERBS_ABI_H

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <infiniband/verbs.h>

/* The private ABI generation this file describes. */
#define UR_VERBS_PRIVATE_ABI 34

/* libibverbs appends this to a provider name (or to an absolute path given
 * in RDMAV_DRIVERS) before it dlopen()s it. */
#define UR_VERBS_PROVIDER_SUFFIX "-rdmav34.so"

/* The kernel uverbs ABI version uroce reports (class/infiniband_verbs/
 * abi_version and uverbsN/abi_version).  libibverbs v44 refuses a class-wide
 * value outside 3..6 for every device; 6 is what current kernels report. */
#define UR_VERBS_UVERBS_ABI 6

/*
 * A doubly linked list link, laid out as the one libibverbs embeds in its
 * device records.  libibverbs owns these links; a provider must not touch
 * them.
 */
struct ur_verbs_list_link {
	struct ur_verbs_list_link *next;
	struct ur_verbs_list_link *prev;
};

/* ------------------------------------------------------------------ */
/* Logging                                                              */
/* ------------------------------------------------------------------ */

/* Levels for __verbs_log(); the env var VERBS_LOG_LEVEL selects the most
 * verbose level printed and VERBS_LOG_FILE where it goes (a release build of
 * libibverbs prints nothing unless VERBS_LOG_FILE names a writable file). */
enum {
	VERBS_LOG_LEVEL_NONE = 0,
	VERBS_LOG_ERR = 1,
	VERBS_LOG_WARN = 2,
	VERBS_LOG_INFO = 3,
	VERBS_LOG_DEBUG = 4,
};

void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt,
		 ...) __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------ */
/* Device discovery: matching a sysfs device to a provider               */
/* ------------------------------------------------------------------ */

/* How one verbs_match_ent entry is compared with a device. */
enum {
	VERBS_MATCH_SENTINEL = 0,  /* terminates a match table */
	VERBS_MATCH_PCI = 1,       /* vendor/device against device/modalias */
	VERBS_MATCH_MODALIAS = 2,  /* fnmatch() pattern against the modalias */
	VERBS_MATCH_DRIVER_ID = 3, /* kernel driver id, netlink discovery only */
};

/*
 * One row of a provider's match table (the table ends with a row whose kind
 * is VERBS_MATCH_SENTINEL).  Without netlink, libibverbs tries, in order:
 * driver id (never known in sysfs mode), then the pattern against the
 * string "rdma_device:N<ibdev name>", then the pattern against the device's
 * device/modalias file.  The row that matched is left in
 * verbs_sysfs_dev.match for the provider's match_device/alloc_device.
 */
struct verbs_match_ent {
	void *driver_data; /* opaque, for the provider */
	union {
		const char *modalias; /* MODALIAS: an fnmatch() pattern */
		uint64_t driver_id;   /* DRIVER_ID: enum rdma_driver_id */
	} u;
	uint16_t vendor; /* PCI: vendor id */
	uint16_t device; /* PCI: device id */
	uint8_t kind;    /* one of VERBS_MATCH_* */
};

/* A table row matching devices whose name starts with name_prefix. */
#define VERBS_NAME_MATCH(name_prefix, data)                                    \
	{                                                                      \
		.driver_data = (data),                                         \
		.u.modalias = "rdma_device:*N" name_prefix "*",                 \
		.kind = VERBS_MATCH_MODALIAS,                                  \
	}

/* A table row matching an fnmatch() pattern on device/modalias. */
#define VERBS_MODALIAS_MATCH(pattern, data)                                    \
	{                                                                      \
		.driver_data = (void *)(data),                                 \
		.u.modalias = (pattern),                                       \
		.kind = VERBS_MATCH_MODALIAS,                                  \
	}

/* A table row matching a PCI vendor and device id. */
#define VERBS_PCI_MATCH(pci_vendor, pci_device, data)                          \
	{                                                                      \
		.driver_data = (void *)(data),                                 \
		.vendor = (pci_vendor),                                        \
		.device = (pci_device),                                        \
		.kind = VERBS_MATCH_PCI,                                       \
	}

/* A table row matching a kernel driver id (netlink discovery only). */
#define VERBS_DRIVER_ID(id)                                                    \
	{                                                                      \
		.u.driver_id = (id),                                           \
		.kind = VERBS_MATCH_DRIVER_ID,                                 \
	}

/* Bits of verbs_sysfs_dev.flags: which lazily read fields are valid. */
enum {
	VSYSFS_READ_MODALIAS = 1 << 0,
	VSYSFS_READ_NODE_GUID = 1 << 1,
};

/*
 * What libibverbs learnt about one uverbs device before asking providers
 * about it.  Allocated and owned by libibverbs; after a provider accepts the
 * device it hangs off verbs_device.sysfs and lives as long as the device.
 * In sysfs (non-netlink) discovery: ibdev_idx is -1, driver_id is 0
 * (unknown), num_ports is 0 (never read), node_guid is filled only when
 * ibv_get_device_guid() first reads the node_guid file.
 */
struct verbs_sysfs_dev {
	struct ur_verbs_list_link entry;    /* libibverbs' list, hands off */
	void *provider_data;                /* free for the provider */
	const struct verbs_match_ent *match; /* row that matched, or NULL */
	unsigned int flags;                 /* VSYSFS_READ_* */
	char sysfs_name[IBV_SYSFS_NAME_MAX]; /* "uverbs0" */
	dev_t sysfs_cdev;                   /* from uverbsN/dev; 0 = any */
	char ibdev_name[IBV_SYSFS_NAME_MAX]; /* from uverbsN/ibdev */
	char ibdev_path[IBV_SYSFS_PATH_MAX]; /* $SYSFS/class/infiniband/<ibdev> */
	char modalias[512];                 /* device/modalias, when read */
	uint64_t node_guid;                 /* host order, VSYSFS_READ_NODE_GUID */
	uint32_t driver_id;                 /* enum rdma_driver_id */
	enum ibv_node_type node_type;       /* decoded from the node_type file */
	int ibdev_idx;                      /* kernel index; -1 without netlink */
	uint32_t num_ports;
	uint32_t abi_ver;                   /* from uverbsN/abi_version */
	struct timespec time_created;       /* mtime of ibdev_path */
};

struct verbs_device;

/*
 * The provider's entry in libibverbs: registered once per process with
 * verbs_register_driver_34() and never copied, so it must outlive every
 * device (a static const object).  libibverbs asks each registered provider,
 * in registration order, whether it takes a device; the first that does
 * wins.
 */
struct verbs_device_ops {
	const char *name; /* shown in warnings; uroce also uses it as an id */

	/* Accepted range of uverbsN/abi_version.  Checked after matching;
	 * a device outside the range is refused with a warning on stderr. */
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;

	/* Optional table ending in a VERBS_MATCH_SENTINEL row. */
	const struct verbs_match_ent *match_table;

	/* Only for statically linked libibverbs; NULL for a plugin. */
	const struct verbs_device_ops **static_providers;

	/* Optional.  Called for every device after the table lookup (with
	 * sysfs_dev->match set or NULL); return true to take the device.
	 * Without it, a table row must have matched. */
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);

	/* Open a context: see verbs_init_and_alloc_context().  Owns cmd_fd
	 * from the moment it is called (close it on failure, or let
	 * verbs_uninit_context() do it).  private_data is whatever the
	 * application passed to verbs_open_device(), NULL from
	 * ibv_open_device(). */
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);

	/* Optional: ibv_import_device().  NULL makes it fail EOPNOTSUPP. */
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);

	/* Allocate the provider's device record, which must start with, or
	 * embed, struct verbs_device (zeroed).  libibverbs then fills ops,
	 * refcount, node/transport type, names and paths, and sysfs. */
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);

	/* Free what alloc_device allocated, when the last reference to the
	 * device goes.  libibverbs frees the sysfs record itself. */
	void (*uninit_device)(struct verbs_device *device);
};

/* The library's view of one device; struct ibv_device must stay first
 * because libibverbs converts between the two by address. */
struct verbs_device {
	struct ibv_device device;
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct ur_verbs_list_link entry; /* libibverbs' device list */
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

static inline struct verbs_device *
verbs_get_device(const struct ibv_device *dev)
{
	return (struct verbs_device *)((uintptr_t)dev -
				       offsetof(struct verbs_device, device));
}

/* The registration function; the ABI number is part of its name so that a
 * provider built for another generation fails to load instead of
 * misbehaving.  Keeps a pointer to ops. */
void verbs_register_driver_34(const struct verbs_device_ops *ops);

/*
 * Register a provider from an ELF constructor, so that registration happens
 * when libibverbs dlopen()s the object (or, if the object is preloaded,
 * before main()).  Unlike rdma-core's PROVIDER_DRIVER this does not create
 * the verbs_provider_<name> alias, which only a static libibverbs reads.
 */
#define UR_VERBS_PROVIDER_REGISTER(ops_object)                                 \
	static void __attribute__((constructor))                               \
	ur_verbs_register_##ops_object(void)                                   \
	{                                                                      \
		verbs_register_driver_34(&(ops_object));                       \
	}

/* ------------------------------------------------------------------ */
/* Wrappers around public verbs objects                                  */
/* ------------------------------------------------------------------ */

enum verbs_xrcd_mask {
	VERBS_XRCD_HANDLE = 1 << 0,
	VERBS_XRCD_RESERVED = 1 << 1,
};

struct verbs_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask; /* VERBS_XRCD_* */
	uint32_t handle;
};

/* An SRQ as created through create_srq_ex (XRC SRQs carry the extra
 * fields). */
struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

/* How a verbs_mr came to be; libibverbs reads it in ibv_dereg_mr() to decide
 * whether to undo the madvise(MADV_DONTFORK) it did at registration. */
enum ibv_mr_type {
	IBV_MR_TYPE_MR = 0,
	IBV_MR_TYPE_NULL_MR = 1,
	IBV_MR_TYPE_IMPORTED_MR = 2,
	IBV_MR_TYPE_DMABUF_MR = 3,
};

/*
 * Every struct ibv_mr a provider returns from reg_mr, reg_dmabuf_mr,
 * alloc_null_mr, reg_dm_mr or import_mr must be the ibv_mr member of one of
 * these: libibverbs' ibv_dereg_mr() reads mr_type and access back through
 * the ibv_mr pointer, and hands dereg_mr/rereg_mr the wrapper.  The provider
 * fills mr_type and access (rdma-core's kernel helper used to); the library
 * fills ibv_mr's context, pd, addr and length after reg_mr returns.
 */
struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};

static inline struct verbs_mr *verbs_get_mr(struct ibv_mr *mr)
{
	return (struct verbs_mr *)((uintptr_t)mr -
				   offsetof(struct verbs_mr, ibv_mr));
}

enum verbs_qp_mask {
	VERBS_QP_XRCD = 1 << 0,
	VERBS_QP_EX = 1 << 1,
};

/*
 * A QP.  The union lets one object serve both ibv_create_qp() and
 * ibv_create_qp_ex(): struct ibv_qp_ex begins with a struct ibv_qp, so
 * ibv_qp_to_qp_ex() is an address-preserving conversion.  libibverbs reads
 * comp_mask (VERBS_QP_EX) in ibv_qp_to_qp_ex() to decide whether the
 * extended members are valid.
 */
struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask; /* VERBS_QP_* */
	struct verbs_xrcd *xrcd;
};
static_assert(offsetof(struct ibv_qp_ex, qp_base) == 0,
	      "ibv_qp_ex must begin with its ibv_qp");

/* A CQ, usable both as ibv_cq and, when created through create_cq_ex, as
 * ibv_cq_ex (which likewise begins with the members of ibv_cq). */
struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

enum ibv_flow_action_type {
	IBV_FLOW_ACTION_UNSPECIFIED = 0,
	IBV_FLOW_ACTION_ESP = 1,
};

struct verbs_flow_action {
	struct ibv_flow_action action;
	uint32_t handle;
	enum ibv_flow_action_type type;
};

struct verbs_dm {
	struct ibv_dm dm;
	uint32_t handle;
};

struct verbs_counters {
	struct ibv_counters counters;
	uint32_t handle;
};

/* The two GID kinds ibv_query_gid_type() distinguishes. */
enum ibv_gid_type_sysfs {
	IBV_GID_TYPE_SYSFS_IB_ROCE_V1 = 0,
	IBV_GID_TYPE_SYSFS_ROCE_V2 = 1,
};

/* What the sysfs fallback of the GID queries reads. */
enum verbs_query_gid_attr_mask {
	VERBS_QUERY_GID_ATTR_GID = 1 << 0,
	VERBS_QUERY_GID_ATTR_TYPE = 1 << 1,
	VERBS_QUERY_GID_ATTR_NDEV_IFINDEX = 1 << 2,
};

/* ------------------------------------------------------------------ */
/* The provider's operations                                             */
/* ------------------------------------------------------------------ */

/*
 * Every operation a provider may implement, in the order libibverbs lays
 * them out (alphabetical).  Install a table with verbs_set_ops(): entries
 * left NULL keep libibverbs' stub, which fails with EOPNOTSUPP (pointer
 * returning stubs return NULL with errno set).  Exceptions: the stubs for
 * async_event, cq_event, the unimport_* ops and free_context do nothing
 * (so a provider without free_context leaks every context), and the
 * query_qp_data_in_order stub returns 0.  libibverbs copies the table, so
 * it may be a const static object; several tables may be applied in turn.
 *
 * The verbs error contract applies: int operations return 0 or a positive
 * errno (post_* also set *bad_wr); pointer operations return NULL and set
 * errno.  free_context must end with verbs_uninit_context() and free the
 * provider context.
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	/* Called by ibv_get_async_event() after it has decoded an event read
	 * from context->async_fd, before returning it to the caller. */
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	/* Called by ibv_get_cq_event() for the CQ it read from a completion
	 * channel's fd; the usual place to re-arm bookkeeping. */
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
	struct ibv_counters *(*create_counters)(
		struct ibv_context *context,
		struct ibv_counters_init_attr *init_attr);
	/* ibv_create_cq() calls verbs_init_cq() on the result itself. */
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	/* Likewise ibv_create_cq_ex(), which also rejects unknown wc_flags
	 * before calling this. */
	struct ibv_cq_ex *(*create_cq_ex)(
		struct ibv_context *context,
		struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(
		struct ibv_context *context,
		struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(
		struct ibv_context *context,
		struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *context,
		struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(
		struct ibv_context *context,
		struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(
		struct ibv_context *context,
		struct ibv_xrcd_init_attr *xrcd_init_attr);
	/* The data-path entries below are also copied into the public
	 * context->ops, which the inline ibv_poll_cq()/ibv_post_*() call
	 * directly. */
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	/* Serves both ibv_query_device() (input NULL, attr_size the size of
	 * struct ibv_device_attr) and ibv_query_device_ex(): fill no more
	 * than attr_size bytes of *attr. */
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	/* libibverbs zeroes *port_attr (or a full-size bounce buffer for
	 * old callers) before calling this. */
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp,
				      enum ibv_wr_opcode op, uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	/* ibv_reg_mr() has already madvise()d the range DONTFORK (unless
	 * on-demand paging was asked for) and sets context/pd/addr/length
	 * after this returns; lkey, rkey, handle and the verbs_mr fields are
	 * the provider's. */
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

/* ------------------------------------------------------------------ */
/* Library services for providers (IBVERBS_PRIVATE_34)                   */
/* ------------------------------------------------------------------ */

/*
 * Allocate alloc_size zeroed bytes, of which the verbs_context sits
 * (uintptr_t)context_offset bytes in, and initialise that context: take a
 * device reference, record cmd_fd, set async_fd to -1, install libibverbs'
 * stub operations, and probe cmd_fd with one ioctl to learn whether the
 * "kernel" speaks the ioctl command protocol.  On failure returns NULL with
 * errno set and cmd_fd closed.  Use through verbs_init_and_alloc_context().
 */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);

/*
 * Allocate the provider context pointed to by drv_ctx_ptr's type, whose
 * struct verbs_context member is ctx_member, and return it typed.
 * driver_id is an enum rdma_driver_id value; uroce passes 0 (unknown).
 */
#define verbs_init_and_alloc_context(ibdev, cmd_fd, drv_ctx_ptr, ctx_member,   \
				     driver_id)                                \
	((__typeof__(drv_ctx_ptr))_verbs_init_and_alloc_context(               \
		(ibdev), (cmd_fd), sizeof(*(drv_ctx_ptr)),                     \
		(struct verbs_context *)(uintptr_t)offsetof(                   \
			__typeof__(*(drv_ctx_ptr)), ctx_member),               \
		(driver_id)))

/* Undo _verbs_init_and_alloc_context() except the final free(): closes
 * cmd_fd and async_fd (when not -1) and drops the device reference. */
void verbs_uninit_context(struct verbs_context *context);

/* Install ops (non-NULL entries only) into the context. */
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

/* Fill the library-owned members of a new CQ (context, channel and its
 * reference count, cq_context, event counters, mutex and condvar).
 * ibv_create_cq() and ibv_create_cq_ex() call it on what the provider
 * returns; a provider only needs it for CQs created by other means. */
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);

/* ibv_open_device() with a provider-defined private_data argument that is
 * passed through to alloc_context. */
struct ibv_context *verbs_open_device(struct ibv_device *device,
				      void *private_data);

/* Read "<sysfs_dev->ibdev_path>/<formatted name>" into buf, dropping one
 * trailing newline; returns the length read or -1.  Note: a file of exactly
 * size bytes without a newline fails, and an empty file returns 0 leaving
 * buf untouched. */
int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
			      struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
	__attribute__((format(printf, 4, 5)));

/* GID type of one GID table entry (through the sysfs fallback when the
 * cdev does not answer the ioctl). 0 or -1. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, enum ibv_gid_type_sysfs *type);

/* Set from RDMAV_ALLOW_DISASSOC_DESTROY; only the kernel command helpers
 * read it. */
extern bool verbs_allow_disassociate_destroy;

/* Public (IBVERBS_1.0) sysfs helpers that only the provider header
 * declares.  ibv_get_sysfs_path() honours SYSFS_PATH unless setuid. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);

/* Kernel event records that libibverbs reads from fds a provider without a
 * kernel must now produce itself: ibv_get_async_event() reads exactly one
 * of the first from context->async_fd, ibv_get_cq_event() one of the
 * second from a completion channel's fd.  Each read must return the whole
 * record.  (They are also in <rdma/ib_user_verbs.h>; restated here so the
 * provider needs no kernel header.) */
struct ur_uverbs_async_event_desc {
	uint64_t element;    /* ibv_cq/qp/srq/wq pointer, or port number */
	uint32_t event_type; /* enum ibv_event_type */
	uint32_t reserved;
};

struct ur_uverbs_comp_event_desc {
	uint64_t cq_handle; /* the struct ibv_cq pointer */
};

/* ------------------------------------------------------------------ */
/* Layout checks (values measured against rdma-core v44.0, x86_64)       */
/* ------------------------------------------------------------------ */

#if defined(__x86_64__) && defined(__LP64__)
static_assert(sizeof(struct ur_verbs_list_link) == 16, "list link");

static_assert(sizeof(struct verbs_match_ent) == 24, "verbs_match_ent");
static_assert(offsetof(struct verbs_match_ent, u) == 8, "match u");
static_assert(offsetof(struct verbs_match_ent, vendor) == 16, "match vendor");
static_assert(offsetof(struct verbs_match_ent, device) == 18, "match device");
static_assert(offsetof(struct verbs_match_ent, kind) == 20, "match kind");

static_assert(sizeof(struct verbs_sysfs_dev) == 992, "verbs_sysfs_dev");
static_assert(offsetof(struct verbs_sysfs_dev, provider_data) == 16,
	      "sysfs provider_data");
static_assert(offsetof(struct verbs_sysfs_dev, match) == 24, "sysfs match");
static_assert(offsetof(struct verbs_sysfs_dev, flags) == 32, "sysfs flags");
static_assert(offsetof(struct verbs_sysfs_dev, sysfs_name) == 36,
	      "sysfs sysfs_name");
static_assert(offsetof(struct verbs_sysfs_dev, sysfs_cdev) == 104,
	      "sysfs sysfs_cdev");
static_assert(offsetof(struct verbs_sysfs_dev, ibdev_name) == 112,
	      "sysfs ibdev_name");
static_assert(offsetof(struct verbs_sysfs_dev, ibdev_path) == 176,
	      "sysfs ibdev_path");
static_assert(offsetof(struct verbs_sysfs_dev, modalias) == 432,
	      "sysfs modalias");
static_assert(offsetof(struct verbs_sysfs_dev, node_guid) == 944,
	      "sysfs node_guid");
static_assert(offsetof(struct verbs_sysfs_dev, driver_id) == 952,
	      "sysfs driver_id");
static_assert(offsetof(struct verbs_sysfs_dev, node_type) == 956,
	      "sysfs node_type");
static_assert(offsetof(struct verbs_sysfs_dev, ibdev_idx) == 960,
	      "sysfs ibdev_idx");
static_assert(offsetof(struct verbs_sysfs_dev, num_ports) == 964,
	      "sysfs num_ports");
static_assert(offsetof(struct verbs_sysfs_dev, abi_ver) == 968,
	      "sysfs abi_ver");
static_assert(offsetof(struct verbs_sysfs_dev, time_created) == 976,
	      "sysfs time_created");

static_assert(sizeof(struct verbs_device_ops) == 72, "verbs_device_ops");
static_assert(offsetof(struct verbs_device_ops, match_min_abi_version) == 8,
	      "ops min abi");
static_assert(offsetof(struct verbs_device_ops, match_table) == 16,
	      "ops match_table");
static_assert(offsetof(struct verbs_device_ops, match_device) == 32,
	      "ops match_device");
static_assert(offsetof(struct verbs_device_ops, alloc_context) == 40,
	      "ops alloc_context");
static_assert(offsetof(struct verbs_device_ops, import_context) == 48,
	      "ops import_context");
static_assert(offsetof(struct verbs_device_ops, alloc_device) == 56,
	      "ops alloc_device");
static_assert(offsetof(struct verbs_device_ops, uninit_device) == 64,
	      "ops uninit_device");

static_assert(sizeof(struct ibv_device) == 664, "ibv_device (public)");
static_assert(sizeof(struct verbs_device) == 712, "verbs_device");
static_assert(offsetof(struct verbs_device, device) == 0, "device first");
static_assert(offsetof(struct verbs_device, ops) == 664, "vdev ops");
static_assert(offsetof(struct verbs_device, refcount) == 672,
	      "vdev refcount");
static_assert(offsetof(struct verbs_device, entry) == 680, "vdev entry");
static_assert(offsetof(struct verbs_device, sysfs) == 696, "vdev sysfs");
static_assert(offsetof(struct verbs_device, core_support) == 704,
	      "vdev core_support");

/* 76 function pointers, alphabetical. */
static_assert(sizeof(struct verbs_context_ops) == 76 * sizeof(void *),
	      "verbs_context_ops");
static_assert(offsetof(struct verbs_context_ops, advise_mr) == 0, "advise_mr");
static_assert(offsetof(struct verbs_context_ops, alloc_pd) == 40, "alloc_pd");
static_assert(offsetof(struct verbs_context_ops, async_event) == 56,
	      "async_event");
static_assert(offsetof(struct verbs_context_ops, cq_event) == 96, "cq_event");
static_assert(offsetof(struct verbs_context_ops, create_cq) == 120,
	      "create_cq");
static_assert(offsetof(struct verbs_context_ops, create_qp) == 152,
	      "create_qp");
static_assert(offsetof(struct verbs_context_ops, dereg_mr) == 224,
	      "dereg_mr");
static_assert(offsetof(struct verbs_context_ops, destroy_qp) == 272,
	      "destroy_qp");
static_assert(offsetof(struct verbs_context_ops, free_context) == 312,
	      "free_context");
static_assert(offsetof(struct verbs_context_ops, modify_qp) == 376,
	      "modify_qp");
static_assert(offsetof(struct verbs_context_ops, poll_cq) == 424, "poll_cq");
static_assert(offsetof(struct verbs_context_ops, post_send) == 440,
	      "post_send");
static_assert(offsetof(struct verbs_context_ops, query_device_ex) == 464,
	      "query_device_ex");
static_assert(offsetof(struct verbs_context_ops, query_port) == 480,
	      "query_port");
static_assert(offsetof(struct verbs_context_ops, reg_mr) == 544, "reg_mr");
static_assert(offsetof(struct verbs_context_ops, req_notify_cq) == 552,
	      "req_notify_cq");
static_assert(offsetof(struct verbs_context_ops, unimport_pd) == 600,
	      "unimport_pd");

static_assert(sizeof(struct verbs_xrcd) == 16, "verbs_xrcd");
static_assert(sizeof(struct verbs_srq) == 160, "verbs_srq");
static_assert(offsetof(struct verbs_srq, srq_type) == 128, "srq_type");
static_assert(offsetof(struct verbs_srq, srq_num) == 152, "srq_num");
static_assert(sizeof(struct verbs_mr) == 56, "verbs_mr");
static_assert(offsetof(struct verbs_mr, mr_type) == 48, "mr_type");
static_assert(offsetof(struct verbs_mr, access) == 52, "mr access");
static_assert(sizeof(struct verbs_qp) == 368, "verbs_qp");
static_assert(offsetof(struct verbs_qp, comp_mask) == 352, "qp comp_mask");
static_assert(offsetof(struct verbs_qp, xrcd) == 360, "qp xrcd");
static_assert(sizeof(struct verbs_cq) == 288, "verbs_cq");
static_assert(sizeof(struct verbs_flow_action) == 16, "verbs_flow_action");
static_assert(sizeof(struct verbs_dm) == 40, "verbs_dm");
static_assert(sizeof(struct verbs_counters) == 16, "verbs_counters");
static_assert(sizeof(struct ur_uverbs_async_event_desc) == 16,
	      "async event record");
static_assert(sizeof(struct ur_uverbs_comp_event_desc) == 8,
	      "completion event record");
#endif

#endif /* UROCE_PROVIDER_VERBS_ABI_H */
