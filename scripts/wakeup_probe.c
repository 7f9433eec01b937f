// How long a thread that sleeps 1 ms oversleeps while N threads spin, with the spinners' scheduler
// slice at the kernel's default or at SLICE_US (Linux 6.12+ honours a SCHED_OTHER thread's
// sched_runtime as its slice). The mechanism behind CKernels/thread_slice.c.
//   gcc -O2 -o /tmp/wakeup_probe scripts/wakeup_probe.c -lpthread
//   /tmp/wakeup_probe 0 2; /tmp/wakeup_probe 10000 2     # SLICE_US SPINNERS [POLICY]
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#define SCHED_NORMAL 0
struct sched_attr { uint32_t size, sched_policy; uint64_t sched_flags; int32_t sched_nice; uint32_t sched_priority; uint64_t sched_runtime, sched_deadline, sched_period; uint32_t sched_util_min, sched_util_max; };

static int slice_us = 0;
static volatile int stop = 0;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int policy=0;
static void set_slice(int us){
  if(policy){ struct sched_attr a; memset(&a,0,sizeof a); a.size=sizeof a; a.sched_policy=policy; if(syscall(SYS_sched_setattr,0,&a,0)) perror("batch"); return; }
  if(!us) return;
  struct sched_attr a; memset(&a,0,sizeof a); a.size=sizeof a; a.sched_policy=SCHED_NORMAL; a.sched_runtime=(uint64_t)us*1000;
  if(syscall(SYS_sched_setattr,0,&a,0)) perror("sched_setattr");
}
static void *spin(void *p){ set_slice(slice_us); volatile double x=1; while(!stop){ for(int i=0;i<1000;i++) x=x*1.0000001+1e-9; } return 0; }
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  slice_us = argc>1?atoi(argv[1]):0; policy = argc>3?atoi(argv[3]):0; int n=argc>2?atoi(argv[2]):2;
  pthread_t t[8]; for(int i=0;i<n;i++) pthread_create(&t[i],0,spin,0);
  usleep(200000);
  enum{N=400}; double lat[N];
  for(int i=0;i<N;i++){ double t0=now(); struct timespec d={0,1000000}; nanosleep(&d,0); lat[i]=(now()-t0-0.001)*1e6; }
  stop=1; for(int i=0;i<n;i++) pthread_join(t[i],0);
  qsort(lat,N,sizeof(double),cmp);
  printf("slice=%dus spinners=%d oversleep us: median %.0f p90 %.0f p99 %.0f max %.0f\n",slice_us,n,lat[N/2],lat[N*9/10],lat[N*99/100],lat[N-1]);
}
