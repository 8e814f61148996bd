/* SPDX-License-Identifier: BSD-2-Clause */
/* `uroce-lab experiment`: the congestion-control experiments and what they share. */
#ifndef UROCE_EXPERIMENT_H
#define UROCE_EXPERIMENT_H

#include <stdbool.h>
#include <stdio.h>

#include "incast.h"

int exp_incast(int argc, char **argv);
int exp_converge(int argc, char **argv);
int exp_spray(int argc, char **argv);
/* `uroce-lab experiment merge`: the shards of a sweep's CSV into one (exp_sweep.c). */
int exp_merge(int argc, char **argv);
/* From DIR/spray.csv: the GBN/SR pivot, IRN's ratio and (with `plot`) the plot. 0 or -1. */
int exp_spray_report(const char *dir, bool plot);
/* The incast table from DIR/incast.csv; with `whole`, DCQCN's verdict; the plot. */
int exp_incast_report(const char *dir, bool plot, bool whole);
int exp_incast_plot(const char *dir, const char *csv, const char *qcsv, uint64_t rate_bps,
		    uint64_t kmax, unsigned nmax);

/* spray.csv's columns: the run's number first, its exact options last. */
#define EXP_SPRAY_CSV_HEADER                                                                       \
	"run,workload,path,cc,pfc,mode,flows,flows_done,goodput_gbps,goodput_fraction,"            \
	"fct_p50_us,fct_p99_us,fct_p99_over_ideal,fct_max_us,jain,steps,done_us,step_max_us,"      \
	"retx_packets,nak_seq,timeouts,sr_reorder_lost,sr_spurious_retx,drops,ce_marked,cnps,"     \
	"pauses,queue_max_kb,queue_mean_kb,queue_hot_kb,errors,sim_us,events,hosts_per_leaf,"      \
	"leaves,spines,host_bps,skew_ps,buffer_bytes,flow_bytes,xoff_bytes,msg_size,depth,seed,"   \
	"start_us,args"

/* `uroce-lab experiment incast`'s CSVs: each row starts with its run's number. */
#define EXP_INCAST_CSV_HEADER                                                                      \
	"run,config,senders,goodput_gbps,goodput_fraction,utilisation,jain,drops,retx_packets,"    \
	"timeouts,ce_marked,cnps_sent,cnps_handled,pauses,paused_fraction,queue_max_kb,"           \
	"queue_p99_kb,queue_mean_kb,errors,rate_bps,kmax_bytes,seed,args"
#define EXP_INCAST_FLOWS_CSV_HEADER "run,config,senders,flow,goodput_gbps"
#define EXP_INCAST_QUEUE_CSV_HEADER "run,config,senders,t_us,queue_kb"

/* Create `dir` (and its parents); 0 or -1 with a message. */
int exp_mkdir(const char *dir);
/* Open dir/name for writing; the full path goes to `path`. NULL with a message. */
FILE *exp_open(const char *dir, const char *name, char *path, size_t len);
/* Run gnuplot on `script`; 0, or -1 (with a message) when it is missing or fails. */
int exp_gnuplot(const char *script);
/* Apply a congestion-control spec (cc_spec.h) to the DCQCN knobs of `c`. */
bool exp_dcqcn_spec(struct sim_incast_cfg *c, const char *spec);
/* A comma-separated list of names (each one of names[0..n-1]) into on[]:
 * false for an unknown name or an empty list. */
bool exp_parse_names(const char *arg, const char *const *names, unsigned n, bool *on);
/* `--shard I/N` (0 <= I < N) into *i and *n: false for anything else. */
bool exp_parse_shard(const char *arg, unsigned *i, unsigned *n);
/* A progress line on stderr, when it is a terminal. */
void exp_progress(bool quiet, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void exp_progress_done(bool quiet);

#endif
