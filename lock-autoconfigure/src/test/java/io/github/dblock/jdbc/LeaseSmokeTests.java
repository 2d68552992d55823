package io.github.dblock.jdbc;

import java.time.Duration;
import java.util.List;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class LeaseSmokeTests {

	@Test
	void acquireAndRelease() {
		try (HikariDataSource ds = TestDatabase.get().newDataSource(4)) {
			LockTable table = LockTable.of("distributed_lock");
			LockSchema.migrate(ds, table);
			LeaseLockProvider provider = new LeaseLockProvider(ds, table, Duration.ofSeconds(5), Duration.ofMillis(10),
					Duration.ofMillis(100));
			LockTemplate template = new LockTemplate(List.of(provider), LockMode.LEASE, Duration.ZERO,
					Duration.ofSeconds(30), "test");
			String resource = "smoke-" + UUID.randomUUID();
			long first;
			try (LockHandle lock = template.acquire(resource)) {
				first = lock.fencingToken();
				System.out.println("token " + first);
				assertThat(first).isGreaterThan(0);
			}
			try (LockHandle lock = template.acquire(resource)) {
				System.out.println("token " + lock.fencingToken());
				assertThat(lock.fencingToken()).isGreaterThan(first);
			}
		}
	}

}
