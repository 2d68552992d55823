package io.github.dblock.sample.report;

import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;

/**
 * Runs {@link DailySalesReportJob} on its schedule unless {@code sample.report.enabled=false}.
 */
@Configuration(proxyBeanMethods = false)
@EnableScheduling
@ConditionalOnBooleanProperty(name = "sample.report.enabled", matchIfMissing = true)
public class ReportSchedulingConfiguration {

}
