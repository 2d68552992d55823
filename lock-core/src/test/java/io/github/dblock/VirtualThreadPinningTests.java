package io.github.dblock;

import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.jdbc.JdbcLockTemplateBuilder;
import io.github.dblock.semaphore.PermitHandle;
import io.github.dblock.semaphore.SemaphoreOptions;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.nodes.SemaphoreNodes;
import io.github.dblock.test.TestDatabase;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Waiting for a lock does not pin a virtual thread to its carrier: far more virtual threads than carriers contend on a
 * few locks (LEASE and PESSIMISTIC exclusive locks, LEASE read/write locks, a semaphore) on the real test database,
 * while a JFR recording takes every {@code jdk.VirtualThreadPinned} event (threshold zero, with stack traces). No
 * event may have a frame of the library, and each run's outcome is exact: never two holders of an exclusive lock,
 * never a writer beside another holder, never more holders than permits, every task done.
 * <p>
 * Runs on JDK 21 or later only: tagged {@code jdk21}, which the default build excludes, and run by the JDK 25 step of
 * {@code .ci/run}; on an older JVM it fails instead of passing. A positive control (a virtual thread that blocks in a
 * class initializer, which pins on every JDK so far) proves that the recording sees pinning at all. Classes are
 * initialized by a warm-up on a platform thread and a virtual thread first: a virtual thread that waits for another
 * thread to finish a class's static initializer is pinned, once per class and JVM, whoever's class it is (seen: the
 * JDK's {@code sun.nio.ch.Poller} at the first socket read of a virtual thread); such a wait for a class outside the
 * library is not counted.
 */
@Tag("jdk21")
@SuppressWarnings("try") // the handles are held for the scope of their try blocks, not used in them
class VirtualThreadPinningTests {

	/** Virtual threads per run. */
	private static final int THREADS = 200;

	/** A wait long enough that every task gets its turn on a loaded machine. */
	private static final Duration WAIT = Duration.ofSeconds(120);

	private static final String PREFIX = "vt-pin-" + java.util.UUID.randomUUID() + "-";

	private static HikariDataSource pool;

	private static ThreadFactory virtualThreads;

	@BeforeAll
	static void onAVirtualThreadCapableJvm() throws ReflectiveOperationException {
		assertThat(Runtime.version().feature()).as("this test needs JDK 21+; .ci/run runs it on JDK 25, "
				+ "the default build excludes its tag").isGreaterThanOrEqualTo(21);
		assertThat(FlightRecorder.getFlightRecorder().getEventTypes()).extracting(EventType::getName)
			.contains("jdk.VirtualThreadPinned");
		// Thread.ofVirtual().name("vt-", 0).factory(), through reflection: the tests compile with --release 17
		Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
		builder = Class.forName("java.lang.Thread$Builder$OfVirtual")
			.getMethod("name", String.class, long.class)
			.invoke(builder, "vt-", 0L);
		virtualThreads = (ThreadFactory) Class.forName("java.lang.Thread$Builder").getMethod("factory").invoke(builder);
		pool = TestDatabase.get().newDataSource(16);
		LockNodes.migrateOnce(pool);
	}

	@AfterAll
	static void closePool() {
		if (pool != null) {
			pool.close();
		}
	}

	@Test
	void waitingForExclusiveLeaseAndPessimisticLocksDoesNotPinACarrier() throws Exception {
		for (LockMode mode : List.of(LockMode.LEASE, LockMode.PESSIMISTIC)) {
			LockTemplate locks = JdbcLockTemplateBuilder.forDataSource(pool)
				.createSchema(false)
				.defaultMode(mode)
				.waitTime(WAIT)
				.nodeName("vt-" + mode)
				.build();
			String prefix = PREFIX + mode + "-";
			warmUp(() -> locks.acquire(prefix + "warm-up").close());
			Map<String, AtomicInteger> inside = new ConcurrentHashMap<>();
			AtomicInteger overlaps = new AtomicInteger();
			List<RecordedEvent> pins = recordPinning(THREADS, (i) -> {
				String resource = prefix + (i % 4);
				try (LockHandle lock = locks.acquire(resource)) {
					AtomicInteger holders = inside.computeIfAbsent(resource, (key) -> new AtomicInteger());
					if (holders.incrementAndGet() != 1) {
						overlaps.incrementAndGet();
					}
					assertThat(CurrentLock.get()).as("CurrentLock on a virtual thread").containsSame(lock);
					sleep(1);
					holders.decrementAndGet();
				}
			});
			assertThat(overlaps).as(mode + ": two holders of one exclusive lock at once").hasValue(0);
			assertThat(libraryPins(pins)).as(mode + ": pinned with a library frame").isEmpty();
		}
	}

	@Test
	void waitingForReadWriteLocksAndSemaphorePermitsDoesNotPinACarrier() throws Exception {
		LockTemplate locks = JdbcLockTemplateBuilder.forDataSource(pool)
			.createSchema(false)
			.waitTime(WAIT)
			.nodeName("vt-rw")
			.build();
		String prefix = PREFIX + "rw-";
		warmUp(() -> {
			locks.acquire(prefix + "warm-up", LockOptions.defaults().withType(LockType.READ)).close();
			locks.acquire(prefix + "warm-up", LockOptions.defaults().withType(LockType.WRITE)).close();
		});
		Map<String, AtomicInteger> readers = new ConcurrentHashMap<>();
		Map<String, AtomicInteger> writers = new ConcurrentHashMap<>();
		AtomicInteger conflicts = new AtomicInteger();
		List<RecordedEvent> readWritePins = recordPinning(THREADS, (i) -> {
			String resource = prefix + (i % 2);
			boolean write = i % 4 == 0;
			AtomicInteger reading = readers.computeIfAbsent(resource, (key) -> new AtomicInteger());
			AtomicInteger writing = writers.computeIfAbsent(resource, (key) -> new AtomicInteger());
			try (LockHandle lock = locks.acquire(resource,
					LockOptions.defaults().withType(write ? LockType.WRITE : LockType.READ))) {
				if (write) {
					if (writing.incrementAndGet() != 1 || reading.get() != 0) {
						conflicts.incrementAndGet();
					}
					sleep(1);
					writing.decrementAndGet();
				}
				else {
					reading.incrementAndGet();
					if (writing.get() != 0) {
						conflicts.incrementAndGet();
					}
					sleep(1);
					reading.decrementAndGet();
				}
			}
		});
		assertThat(conflicts).as("a writer beside another holder").hasValue(0);
		assertThat(libraryPins(readWritePins)).as("read/write: pinned with a library frame").isEmpty();

		String semaphore = PREFIX + "sem";
		SemaphoreTemplate permits = SemaphoreNodes.node("vt-sem", pool, Duration.ofSeconds(30), Map.of(semaphore, 3));
		SemaphoreOptions waiting = SemaphoreOptions.defaults().withWaitTime(WAIT);
		warmUp(() -> permits.acquire(semaphore, waiting).close());
		AtomicInteger holders = new AtomicInteger();
		AtomicInteger most = new AtomicInteger();
		List<RecordedEvent> semaphorePins = recordPinning(THREADS, (i) -> {
			try (PermitHandle permit = permits.acquire(semaphore, waiting)) {
				int now = holders.incrementAndGet();
				most.accumulateAndGet(now, Math::max);
				sleep(1);
				holders.decrementAndGet();
			}
		});
		assertThat(most.get()).as("most permits held at once, of 3").isBetween(1, 3);
		assertThat(libraryPins(semaphorePins)).as("semaphore: pinned with a library frame").isEmpty();
	}

	@Test
	void theRecordingSeesAVirtualThreadThatIsPinned() throws Exception {
		List<RecordedEvent> pins = recordPinning(1, (i) -> PinsInItsInitializer.touch());
		assertThat(pins).as("pinned events of a virtual thread blocked in a class initializer")
			.anySatisfy((event) -> assertThat(frames(event)).anyMatch((frame) -> frame.contains("PinsInItsInitializer")));
		assertThat(libraryPins(pins)).isEmpty();
	}

	// ------------------------------------------------------------------ helpers

	/**
	 * Runs {@code task(0..threads-1)}, each on a virtual thread of its own, all started together, while recording
	 * {@code jdk.VirtualThreadPinned} with stack traces and no threshold; fails unless every task completes on a
	 * virtual thread within five minutes.
	 * @return the pinned events recorded
	 */
	private static List<RecordedEvent> recordPinning(int threads, IntConsumer task) throws Exception {
		Path file = Files.createTempFile("vt-pinning-", ".jfr");
		try (Recording recording = new Recording()) {
			recording.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
			recording.start();
			CountDownLatch start = new CountDownLatch(1);
			CountDownLatch done = new CountDownLatch(threads);
			AtomicInteger completed = new AtomicInteger();
			AtomicInteger onVirtualThreads = new AtomicInteger();
			List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
			Method isVirtual = Thread.class.getMethod("isVirtual");
			for (int i = 0; i < threads; i++) {
				int index = i;
				virtualThreads.newThread(() -> {
					try {
						if ((boolean) isVirtual.invoke(Thread.currentThread())) {
							onVirtualThreads.incrementAndGet();
						}
						start.await();
						task.accept(index);
						completed.incrementAndGet();
					}
					catch (Throwable ex) {
						failures.add(ex);
					}
					finally {
						done.countDown();
					}
				}).start();
			}
			start.countDown();
			assertThat(done.await(5, TimeUnit.MINUTES)).as("all tasks finished").isTrue();
			recording.stop();
			recording.dump(file);
			assertThat(failures).as("failures").isEmpty();
			assertThat(completed).as("tasks done").hasValue(threads);
			assertThat(onVirtualThreads).as("tasks run on virtual threads").hasValue(threads);
			return RecordingFile.readAllEvents(file)
				.stream()
				.filter((event) -> event.getEventType().getName().equals("jdk.VirtualThreadPinned"))
				.toList();
		}
		finally {
			Files.deleteIfExists(file);
		}
	}

	/**
	 * The events with a frame of the library's own code (not of this test, nor of the test support), except a wait for
	 * another thread to initialize a class outside the library: that happens once per class and JVM, to any code that
	 * is first to use the class (the warm-up initializes those known to be used).
	 */
	private static List<String> libraryPins(List<RecordedEvent> pins) {
		List<String> found = new ArrayList<>();
		for (RecordedEvent event : pins) {
			List<String> frames = frames(event);
			String reason = event.hasField("pinnedReason") ? event.getString("pinnedReason") : "";
			boolean jdkClassInitialization = reason.startsWith("Waited for initialization of ")
					&& !reason.startsWith("Waited for initialization of io.github.dblock.");
			if (!jdkClassInitialization && frames.stream().anyMatch(VirtualThreadPinningTests::isLibraryFrame)) {
				found.add(event.getDuration() + " pinned" + reason(event) + " at " + String.join(" <- ", frames));
			}
		}
		return found;
	}

	/** The event's own account of why the thread was pinned, on JDKs whose event has one. */
	private static String reason(RecordedEvent event) {
		return event.hasField("pinnedReason") ? " (" + event.getValue("pinnedReason") + ", blocking in "
				+ event.getValue("blockingOperation") + ")" : "";
	}

	private static boolean isLibraryFrame(String frame) {
		return frame.startsWith("io.github.dblock.") && !frame.startsWith(VirtualThreadPinningTests.class.getName())
				&& !frame.startsWith("io.github.dblock.test.");
	}

	private static List<String> frames(RecordedEvent event) {
		if (event.getStackTrace() == null) {
			return List.of("(no stack trace)");
		}
		List<String> frames = new ArrayList<>();
		for (RecordedFrame frame : event.getStackTrace().getFrames()) {
			frames.add(frame.getMethod().getType().getName() + "." + frame.getMethod().getName());
		}
		return frames;
	}

	/**
	 * Runs the calls once on a platform thread and once on a virtual thread, so that the classes they use (the JDK's
	 * poller of virtual threads' sockets among them) are initialized before the runs.
	 */
	private static void warmUp(Runnable calls) throws InterruptedException {
		for (Thread thread : List.of(new Thread(calls, "warm-up"), virtualThreads.newThread(calls))) {
			List<Throwable> failure = new java.util.concurrent.CopyOnWriteArrayList<>();
			thread.setUncaughtExceptionHandler((t, ex) -> failure.add(ex));
			thread.start();
			thread.join(TimeUnit.MINUTES.toMillis(2));
			assertThat(failure).as("warm-up").isEmpty();
		}
	}

	private static void sleep(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	/** A class whose static initializer blocks: a virtual thread that initializes it is pinned while it sleeps. */
	static final class PinsInItsInitializer {

		static {
			sleep(50);
		}

		static void touch() {
		}

	}

}
