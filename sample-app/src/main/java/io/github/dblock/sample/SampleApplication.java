package io.github.dblock.sample;

import io.github.dblock.sample.demo.FlashSaleDemo;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * The sample application: a flash-sale stock service and a scheduled report, both protected by
 * {@link io.github.dblock.DistributedLock @DistributedLock}, on an embedded MariaDB unless
 * {@code spring.datasource.url} says otherwise.
 * <p>
 * At start-up it runs the {@link FlashSaleDemo} and logs its results ({@code sample.demo.enabled}); with
 * {@code sample.demo.exit-after=true} it then shuts down.
 */
@SpringBootApplication
@EnableConfigurationProperties(SampleProperties.class)
public class SampleApplication {

	public static void main(String[] args) {
		ConfigurableApplicationContext context = SpringApplication.run(SampleApplication.class, args);
		if (context.getBean(SampleProperties.class).getDemo().isExitAfter()) {
			System.exit(SpringApplication.exit(context));
		}
	}

	@Bean
	@ConditionalOnBooleanProperty(name = "sample.demo.enabled", matchIfMissing = true)
	ApplicationRunner flashSaleDemoRunner(FlashSaleDemo demo) {
		return (args) -> demo.runDemo();
	}

}
