package io.github.dblock;

/**
 * What kind of lock to take on a resource.
 * <p>
 * {@link #EXCLUSIVE} is the plain mutex every mode offers. {@link #READ} and {@link #WRITE} are the two sides of a
 * read/write (shared/exclusive) lock, available in {@link LockMode#LEASE} only: any number of owners may hold the
 * read lock of a resource at the same time, while the write lock excludes every other owner, readers and writers.
 * <p>
 * <strong>The read/write lock of a resource is a different lock from its exclusive lock:</strong> they live in
 * different tables ({@code <table>_rw} and {@code <table>_rw_hold} beside the lock table), so an EXCLUSIVE lock on
 * {@code "x"} does not exclude a READ or WRITE lock on {@code "x"}. Use one kind per resource.
 * <p>
 * Policy: writer preference. A writer that finds the resource busy marks its intent on the database (a short lease
 * on the server's clock, refreshed while it waits, cleared when it gets in or gives up); while another owner's live
 * intent exists, new readers wait, readers already in finish, and the writer gets in once the last of them has
 * released (or its lease ended). So a steady stream of readers cannot starve a writer; a steady stream of writers
 * can delay readers.
 * <p>
 * Reentrancy is per thread, as for exclusive locks: a thread holding the read lock may take it again, a thread
 * holding the write lock may take the write lock again or the read lock (covered by its write lock, no round trip);
 * a thread holding only the read lock cannot take the write lock ({@link LockUpgradeException}: upgrading would
 * deadlock with another reader trying the same). Other threads of the same JVM are other owners.
 */
public enum LockType {

	/** A mutex: one owner at a time, in any {@link LockMode}. The default. */
	EXCLUSIVE,

	/** The shared side of a read/write lock: many readers at once, no writer meanwhile. {@link LockMode#LEASE} only. */
	READ,

	/** The exclusive side of a read/write lock: no other reader or writer meanwhile. {@link LockMode#LEASE} only. */
	WRITE

}
