package io.github.dblock.sample;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;

import io.github.dblock.sample.report.DailySalesReportJob;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.scheduling.annotation.ScheduledAnnotationBeanPostProcessor;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The scheduled report runs on one instance at a time: two application instances (two contexts on the same
 * database, with different node names) trigger it at the same moment, and exactly one of them runs it.
 */
class ReportJobTests {

	@Test
	void twoInstancesTriggeringTogetherRunTheReportOnce() throws Exception {
		String suffix = UUID.randomUUID().toString().substring(0, 8);
		String nodeA = "node-a-" + suffix;
		String nodeB = "node-b-" + suffix;
		try (ConfigurableApplicationContext a = start(nodeA); ConfigurableApplicationContext b = start(nodeB)) {
			assertThat(a.getBeansOfType(ScheduledAnnotationBeanPostProcessor.class))
				.as("scheduling is off, so only this test triggers the report")
				.isEmpty();
			DailySalesReportJob jobA = a.getBean(DailySalesReportJob.class);
			DailySalesReportJob jobB = b.getBean(DailySalesReportJob.class);
			CyclicBarrier together = new CyclicBarrier(2);
			CompletableFuture<Boolean> ranA = CompletableFuture.supplyAsync(() -> {
				await(together);
				return jobA.runOnce();
			});
			CompletableFuture<Boolean> ranB = CompletableFuture.supplyAsync(() -> {
				await(together);
				return jobB.runOnce();
			});
			List<Boolean> ran = List.of(ranA.get(30, TimeUnit.SECONDS), ranB.get(30, TimeUnit.SECONDS));
			assertThat(ran).as("one instance ran the report, the other skipped it").containsExactlyInAnyOrder(true, false);

			JdbcTemplate jdbc = a.getBean(JdbcTemplate.class);
			String winner = ran.get(0) ? nodeA : nodeB;
			String loser = ran.get(0) ? nodeB : nodeA;
			assertThat(runsBy(jdbc, nodeA, nodeB)).containsExactly(winner);

			// The report finished, but the lock is kept for the minimum hold time (2 s here): the other instance
			// still skips, so a late scheduler cannot run the same tick again. After it, that instance gets its turn.
			DailySalesReportJob other = ran.get(0) ? jobB : jobA;
			assertThat(other.runOnce()).as("within the minimum hold time").isFalse();
			Thread.sleep(2_100);
			assertThat(other.runOnce()).isTrue();
			assertThat(runsBy(jdbc, nodeA, nodeB)).containsExactly(winner, loser);

			jdbc.update("DELETE FROM report_run WHERE instance IN (?, ?)", nodeA, nodeB);
		}
	}

	private static List<String> runsBy(JdbcTemplate jdbc, String nodeA, String nodeB) {
		return jdbc.queryForList("SELECT instance FROM report_run WHERE instance IN (?, ?) ORDER BY id", String.class,
				nodeA, nodeB);
	}

	private static ConfigurableApplicationContext start(String nodeName) {
		return new SpringApplicationBuilder(SampleApplication.class).web(WebApplicationType.NONE)
			.run(SampleTestSupport.testDatabaseArguments("--distributed-lock.node-name=" + nodeName,
					"--sample.demo.enabled=false", "--sample.report.enabled=false", "--sample.report.work-time=1s",
					"--sample.report.min-hold=2s"));
	}

	private static void await(CyclicBarrier barrier) {
		try {
			barrier.await(10, TimeUnit.SECONDS);
		}
		catch (Exception ex) {
			throw new IllegalStateException(ex);
		}
	}

}
