/*
 * The exclusive lock protocol of lock-core as a Promela model, checked by model/check.sh.
 * One resource, one row of the lock table; two JVMs: JVM 1 runs threads 1 and 2 (sharing its local gate), JVM 2 runs
 * thread 3. Each thread makes ACQ acquisitions (threads 1 and 3 in LEASE mode, thread 2 in LEASE or PESSIMISTIC
 * mode, chosen freely), then does one fenced write, may renew once, commits and closes. Configurations (check.sh):
 * -DLOCAL (all three threads, replies delivered, no cleanup) and -DREMOTE (threads 1 and 3, lost and late replies,
 * lost releases, the cleanup). Time is discrete: the server clock `clock` ticks (Clock) up to MAXT;
 * a client's clock runs at the same rate, and only the differences of its readings are used (validUntilNanos).
 * A statement is sent and executed in one step (its execution time is its sending time, which is the case least
 * favourable to the client's validity); its reply is a separate step, so it can come late (after ticks) or be lost.
 * Scale: a tick is one token of the clock (any number of statements may run in it); TOKEN_BLOCK 1024 is B = 2, the retention
 * (>= 1 s, i.e. >= 1,000,000 us >= 1023 tokens) is RET = 1 (>= B - 1 ticks).
 * Every step names the statement of LockStatements (LS.xxx) or the Java method it stands for.
 * Defects that can be put back: -DCROSS_MODE_HANDOFF, -DTOKEN_OUTRUN (= -DNO_WRITEBACK -DCLEANUP_IGNORES_TOKEN),
 * -DCLEANUP_IGNORES_TOKEN, -DNO_WRITEBACK, -DLATE_RENEWAL. -DLIVE: the liveness configuration (no lost replies, no
 * giving up, a back-off lasts a tick; the clock passes MAXT only while every thread waits for it) with the LTL
 * property `live`.
 */

#ifndef MAXT
#define MAXT 6          /* last tick of the server clock (safety runs) */
#endif
#ifndef ACQ
#define ACQ 2           /* acquisitions per thread */
#endif
#define NT 3            /* threads */
#define L 2             /* lease time, ticks */
#define B 2             /* ExclusiveLease.TOKEN_BLOCK */
#define RET 1           /* LockTableCleaner retention, ticks */
#define LEASE 0
#define PESS 1
#define K_LEASE 1       /* what a thread holds: a hold of its JVM's ExclusiveLease ... */
#define K_ROW 2         /* ... or the row lock of its transaction (PESSIMISTIC) */

#ifdef TOKEN_OUTRUN
#define NO_WRITEBACK
#define CLEANUP_IGNORES_TOKEN
#endif
#ifdef REMOTE
#define NRUN 2          /* threads 1 and 3: one per JVM */
#else
#define NRUN 3
#endif
#if defined(LIVE) || defined(LOCAL)
#define LOSSY false     /* replies are delivered, releases arrive */
#else
#define LOSSY true
#endif
#ifdef LIVE
#define GIVE_UP false   /* a waiter waits as long as it takes */
#define RETRY (clock > sent)  /* the back-off lasts at least a tick */
#define COUNT skip
/* the clock runs to MAXT, then only while every thread waits for it (timeout), up to a cap */
#define CLOCK_RUNS ((clock < MAXT || timeout) && finished < NRUN && clock < MAXT + 8)
#else
#define GIVE_UP true
#define RETRY (att < ATT)  /* bounded attempts per acquisition (each take reserves a new block of tokens) */
#define COUNT att++
#ifndef ATT
#define ATT 2
#endif
#define CLOCK_RUNS (clock < MAXT)
#endif
#ifdef CROSS_MODE_HANDOFF
#define SAME_MODE(m) true
#else
#define SAME_MODE(m) ((m) == LEASE)   /* ExclusiveHolds.obtain/release: a LEASE goes only to a LEASE caller */
#endif

byte clock = 2;                                  /* UTC_TIMESTAMP(6), in ticks */
/* the row of the lock table */
bit  rowEx;                                    /* the row exists */
byte rowOwner, rowTok, rowExp;                 /* owner_token (0: NULL), fencing_token, expires_at */
byte rowLock;                                  /* thread whose transaction holds the InnoDB row lock, 0: none */
/* per JVM (index 1, 2): the local gate (LocalLocks) and the ExclusiveLease in it */
byte gate[3];                                  /* gate owner thread, 0: free */
byte lOwner[3], lValid[3], lCur[3], lEnd[3];   /* ownerToken, validUntilNanos, current.fencingToken, blockEnd */
bit  lLost[3], parked[3];                      /* lost; a successor's hold parked for the next gate owner */
/* per thread (index 1..3) */
bit  held[4], mode[4], queued[4];
byte tok[4], kind[4];
byte finished;
/* ghosts for the properties */
byte maxHanded;                                /* largest fencing token handed out for the resource */
byte lastGrant;                                /* thread granted the lock last */
byte store;                                    /* largest token the fenced store accepted */

#define jvm(t)        ((t) < 3 -> 1 : 2)
#define max(a, b)     ((a) > (b) -> (a) : (b))
#define min(a, b)     ((a) < (b) -> (a) : (b))
/* RenewableLease: valid by this JVM's clock, not marked lost */
#define leaseValid(j) (lOwner[j] != 0 && !lLost[j] && clock < lValid[j])
/* a thread that holds the lock and believes it valid (HeldLock.isLost() false) */
#define believes(u)   (held[u] && ((kind[u] == K_ROW && rowLock == u) \
                       || (kind[u] == K_LEASE && leaseValid(jvm(u)) && lCur[jvm(u)] == tok[u])))

/* A thread becomes the holder with token k. Safety S1 (token monotonicity per resource, across row deletion) and
   S2 (mutual exclusion modulo fencing: nobody else still believes it holds; a stale holder's token is smaller). */
inline grant(t, k, kd) {
  assert(k > maxHanded);
  assert(t == 1 || !believes(1));
  assert(t == 2 || !believes(2));
  assert(t == 3 || !believes(3));
  maxHanded = k; lastGrant = t; held[t] = 1; tok[t] = k; kind[t] = kd
}

/* LocalLocks: the gate goes to the other thread of JVM 1 if it is queued (the gate is fair), else it is free */
inline letGateGo(t, j) {
  if
  :: j == 1 && queued[3 - t] -> gate[j] = 3 - t
  :: else -> gate[j] = 0
  fi
}

/* HeldExclusiveLeases.release: LS.leaseRelease, owner-checked; writes back the last token handed out
   (LEAST(fencing_token, ?), ExclusiveLease.lastHandedOut). A release that does not arrive leaves the lease to end. */
inline releaseLease(j) {
  if
  :: atomic { rowLock == 0 ->
       if
       :: rowEx && rowOwner == lOwner[j] && rowExp > clock ->
#ifndef NO_WRITEBACK
          rowTok = min(rowTok, lCur[j]);
#endif
          rowOwner = 0; rowExp = clock
       :: else
       fi }
  :: rowLock != 0 -> skip                      /* the row lock wait timed out */
  :: LOSSY -> skip                             /* the connection broke; the lease ends on its own */
  fi;
  d_step { lOwner[j] = 0; lLost[j] = 0; lValid[j] = 0; lCur[j] = 0; lEnd[j] = 0 }
}

proctype Thread(byte t) {
  byte j = jvm(t);
  byte n, me, k, sent, rn, att;
  bit ok;
  do
  :: n < ACQ ->
    n++; att = 0;
    if :: mode[t] = LEASE :: t == 2 -> mode[t] = PESS fi;                     /* threads 1 and 3 ask LEASE */
    queued[t] = 1;
    atomic { (gate[j] == 0 || gate[j] == t) -> gate[j] = t; queued[t] = 0 }   /* ExclusiveHolds.takeGate */
    if                                                                         /* ExclusiveHolds.obtain */
    :: parked[j] ->
      parked[j] = 0;
      if
      :: atomic { SAME_MODE(mode[t]) && leaseValid(j) -> grant(t, lCur[j], K_LEASE) }  /* handed off: no round trip */
      :: else -> releaseLease(j)                                              /* ExclusiveHolds.releaseQuietly */
      fi
    :: else
    fi;
    if
    :: held[t] -> skip
    :: !held[t] && mode[t] == LEASE ->
      me = t + 3 * (n - 1);                                                    /* LeaseAcquisition: one owner token */
lease_try:
      if
      :: atomic { rowEx && rowLock == 0 ->                                     /* LS.leaseTake */
           sent = clock;
           if
           :: rowExp <= clock || rowOwner == me ->
              rowOwner = me; rowTok = max(rowTok + B, clock); rowExp = clock + L; k = rowTok; ok = 1
           :: else -> ok = 0                                                   /* held: LS.rowPeek, back off */
           fi }
      :: atomic { !rowEx ->                                                    /* LS.leaseInsert */
           sent = clock; rowEx = 1; rowOwner = me; rowTok = clock; rowExp = clock + L; k = clock; ok = 1 }
      :: rowEx && rowLock != 0 -> ok = 0                                      /* behind a row lock: busy */
      fi;
      if
      :: ok ->                                                                 /* the take's reply */
        if
#ifdef LATE_RENEWAL
        :: atomic { lOwner[j] = me; lEnd[j] = k; lCur[j] = k - B + 1; lLost[j] = 0;
             lValid[j] = clock + L;                                              /* validity from the reply: the defect */
             grant(t, lCur[j], K_LEASE) }
#else
        :: atomic { clock < sent + L ->                                          /* LeaseLockProvider.leased */
             lOwner[j] = me; lEnd[j] = k; lCur[j] = k - B + 1; lLost[j] = 0;
             lValid[j] = sent + L;                                             /* counted from the sending */
             grant(t, lCur[j], K_LEASE) }
        :: clock >= sent + L ->                                                  /* LateLeases.arrivedLate: give back */
          d_step { lOwner[j] = me; lEnd[j] = k; lCur[j] = k - B + 1 };
          releaseLease(j);
          goto lease_wait
#endif
        :: LOSSY -> goto lease_wait                                            /* reply lost: the take may stand */
        fi
      :: else -> goto lease_wait
      fi;
      goto holding;
lease_wait:
#ifdef LIVE
      sent = clock;
#endif
      if
      :: RETRY -> COUNT; goto lease_try                                            /* WaitLoop: back off, try again */
      :: GIVE_UP -> letGateGo(t, j); goto next                                 /* the wait time ran out */
      fi
    :: !held[t] && mode[t] == PESS ->
      me = t + 3 * (n - 1);
pess_insert:
      if
      :: atomic { !rowEx -> rowEx = 1; rowOwner = 0; rowTok = clock; rowExp = clock }   /* LS.rowInsertFree */
      :: else
      fi;
      if
      :: atomic { rowEx && rowLock == 0 ->                                     /* LS.pessimisticClockRead: granted */
           rowLock = t;
           if
           :: rowExp <= clock ->                                                 /* LS.pessimisticLock matched */
              rowOwner = me; rowExp = clock; k = max(rowTok, clock);
              if :: k > rowTok -> rowTok = k; ok = 1 :: else -> ok = 0 fi
           :: else -> rowLock = 0; ok = 0                                      /* held under a lease: roll back */
           fi }
        if
        :: rowLock == t && !ok ->                                              /* PessimisticFencing.awaitClockPast */
          atomic { clock > rowTok -> rowTok = clock; k = clock }                     /* LS.pessimisticRetoken, increment 0 */
        :: rowLock == t && ok -> skip
        :: rowLock != t -> goto pess_wait
        fi;
        atomic { grant(t, k, K_ROW); letGateGo(t, j) }                         /* Gateless: the gate goes at once */
        goto holding
      :: !rowEx -> goto pess_insert                                            /* deleted by the cleanup meanwhile */
      :: rowEx && rowLock != 0 -> goto pess_wait                               /* innodb_lock_wait_timeout */
      fi;
pess_wait:
#ifdef LIVE
      sent = clock;
#endif
      if
      :: RETRY -> COUNT; goto pess_insert
      :: GIVE_UP -> letGateGo(t, j); goto next
      fi
    fi;
holding:
    rn = 0;
    if                                                                         /* the fenced write */
    :: atomic { tok[t] >= store -> store = tok[t] }
    :: tok[t] < store -> skip                                                  /* rejected: a later holder wrote */
    fi;
    do
    :: kind[t] == K_LEASE && rn == 0 && lOwner[j] != 0 && !lLost[j] ->         /* RenewableLease: renewal */
      rn = 1;
      if
      :: atomic { rowLock == 0 ->                                              /* LS.leaseRenew */
           sent = clock; ok = (rowEx && rowOwner == lOwner[j] && rowExp > clock);
           if :: ok -> rowExp = clock + L :: else fi }
        if                                                                     /* its reply */
#ifdef LATE_RENEWAL
        :: atomic { ok -> lValid[j] = clock + L }
#else
        :: atomic { ok -> lValid[j] = sent + L }
#endif
        :: atomic { !ok -> lLost[j] = 1 }                                      /* matched nothing: lost at once */
        :: LOSSY -> skip                                                       /* lost reply: validity not extended */
        fi
      fi
    :: break
    od;
    if
    :: kind[t] == K_LEASE && mode[t] == LEASE ->
      atomic {                                                                 /* commit, checked at commit */
        rowLock == 0 ->                                                        /* Hold.lockRowInTransaction, LS.leaseLockRow */
        if
        :: lCur[j] == tok[t] && !lLost[j] && rowEx && rowOwner == lOwner[j] && rowExp > clock ->
           assert(lastGrant == t)                                              /* S3: no stale commit */
        :: else -> skip                                                        /* rolled back */
        fi };
      held[t] = 0;                                                             /* ExclusiveHolds.release */
      if
      /* a queued local thread asks the same mode (nextInLineAsks), ExclusiveLease.handOff allows it */
      :: atomic { (j == 1 && queued[3 - t] && SAME_MODE(mode[3 - t]) && lCur[j] == tok[t] && lCur[j] < lEnd[j] && leaseValid(j)) ->
           lCur[j]++; parked[j] = 1; letGateGo(t, j) }
      :: else -> releaseLease(j); letGateGo(t, j)
      fi
    :: kind[t] == K_LEASE && mode[t] == PESS ->                               /* only with CROSS_MODE_HANDOFF */
      held[t] = 0; releaseLease(j);                                            /* the handle's close releases it */
      atomic { assert(lastGrant == t) }                                        /* S3: the commit, later */
    :: kind[t] == K_ROW ->
      atomic { assert(lastGrant == t && rowLock == t); rowLock = 0; held[t] = 0 }  /* S3; COMMIT ends the row lock */
    fi;
next:
    skip;
    d_step { k = 0; sent = 0; rn = 0; att = 0; me = 0 }                        /* (dead values, for the state space) */
  :: n == ACQ -> break
  od;
  finished++
}

active proctype Clock() {
  do
  :: atomic { CLOCK_RUNS -> clock++ }
  od
}

#ifdef CLEANUP_IGNORES_TOKEN
#define TOKEN_PASSED true
#else
#define TOKEN_PASSED (rowTok + RET < clock)      /* only once the clock has passed the token by the retention */
#endif

active proctype Cleaner() {                    /* LockTableCleaner: LS.lockCleanup (FOR UPDATE SKIP LOCKED, DELETE) */
#ifndef LOCAL
  do
  :: atomic { (rowEx && rowLock == 0 && rowExp + RET < clock && TOKEN_PASSED) -> rowEx = 0; rowOwner = 0; rowTok = 0; rowExp = 0 }
  od
#else
  skip                                         /* LOCAL: no cleanup */
#endif
}

init {
  atomic {
    run Thread(1);
#ifndef REMOTE
    run Thread(2);
#endif
    run Thread(3)
  }
}

#ifdef LIVE
ltl live { <> (finished == NRUN) }               /* every acquisition is granted, and the holders release */
#endif
