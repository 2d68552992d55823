package io.github.dblock.process;

import java.io.File;
import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The worker JVMs of the process tests run on the test's own JVM: on JDK 25 in the JDK 25 step of {@code .ci/run}
 * (surefire's {@code jvm}), on the build's JDK otherwise.
 */
class WorkerJvmTests {

	@Test
	void aWorkerRunsOnTheSameJavaAsTheTest() throws Exception {
		Process worker = WorkerProcesses.start(JvmWorker.class, "describe");
		String output = WorkerProcesses.outputOf(worker, Duration.ofMinutes(2));
		assertThat(worker.exitValue()).as(output).isZero();
		assertThat(output.lines()).contains("java.home " + new File(System.getProperty("java.home")).getCanonicalPath(),
				"version " + Runtime.version());
	}

	/** Prints where its Java is and which version it is. */
	public static final class JvmWorker {

		private JvmWorker() {
		}

		public static void main(String[] args) throws Exception {
			System.out.println("java.home " + new File(System.getProperty("java.home")).getCanonicalPath());
			System.out.println("version " + Runtime.version());
		}

	}

}
