package io.github.dblock.sample;

import ch.vorburger.exec.ManagedProcessException;
import io.github.dblock.sample.embedded.EmbeddedMariaDbSupport;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How the sample's embedded MariaDB reports a failed start and logs the server's console, without starting one.
 */
class EmbeddedMariaDbStartTests {

	@Test
	void aFailedStartIsReportedWithTheServersOwnErrorLines() {
		ManagedProcessException ex = new ManagedProcessException("Database does not seem to have started up correctly? "
				+ "Magic string not seen in 120000ms: : ready for connections., last 100 lines of console:\n"
				+ "2026-11-24 11:35:01 0 [Note] Starting MariaDB 11.4.5-MariaDB\n"
				+ "2026-11-24 11:35:01 0 [ERROR] Can't start server: Bind on TCP/IP port. Got error: 98: Address already in use\n"
				+ "2026-11-24 11:35:01 0 [ERROR] Aborting\n");
		assertThat(EmbeddedMariaDbSupport.whatWentWrong(ex)).isEqualTo("the server reported 2026-11-24 11:35:01 0 [ERROR] "
				+ "Can't start server: Bind on TCP/IP port. Got error: 98: Address already in use | 2026-11-24 11:35:01 0 "
				+ "[ERROR] Aborting");
	}

	@Test
	void aStartThatIsNotReadyInTimeNamesTheConsolesLastLine() {
		ManagedProcessException ex = new ManagedProcessException("Database does not seem to have started up correctly? "
				+ "Magic string not seen in 120000ms: : ready for connections., last 100 lines of console:\n"
				+ "2026-11-24 11:35:01 0 [Note] InnoDB: Buffer pool(s) load completed at 261124 11:35:01\n");
		assertThat(EmbeddedMariaDbSupport.whatWentWrong(ex)).isEqualTo("the server was not ready in time; its console's "
				+ "last line: 2026-11-24 11:35:01 0 [Note] InnoDB: Buffer pool(s) load completed at 261124 11:35:01");
	}

	@Test
	void theServersConsoleIsLoggedAtItsOwnLevels() {
		assertThat(EmbeddedMariaDbSupport.level("2026-11-24 11:17:07 12 [Warning] Aborted connection 12 to db: 'sample' "
				+ "user: 'root' host: 'localhost' (Got an error reading communication packets)")).isEqualTo(Level.DEBUG);
		assertThat(EmbeddedMariaDbSupport.level("2026-11-24 11:17:06 0 [Warning] Could not increase number of "
				+ "max_open_files")).isEqualTo(Level.WARN);
		assertThat(EmbeddedMariaDbSupport.level("2026-11-24 11:17:06 0 [Note] InnoDB: error log")).isEqualTo(Level.INFO);
		assertThat(EmbeddedMariaDbSupport.level("2026-11-24 11:17:06 0 [ERROR] Aborting")).isEqualTo(Level.ERROR);
	}

}
