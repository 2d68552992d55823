package io.github.dblock.sample.embedded;

import io.github.dblock.sample.SampleProperties;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.boot.autoconfigure.condition.ConditionMessage;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.util.StringUtils;

/**
 * Lets the sample run without any database set up: when {@code spring.datasource.url} is not set, an embedded
 * MariaDB is started and Spring Boot's {@code DataSource} is pointed at it.
 * <p>
 * The hand-over uses Spring Boot's {@link JdbcConnectionDetails}: when such a bean exists, the auto-configured
 * connection pool takes its URL, user name and password from it instead of from {@code spring.datasource.*}
 * (the other pool settings, such as {@code spring.datasource.hikari.*}, still apply). The database is started
 * when the connection details are created, that is before the {@code DataSource}, and stopped after the
 * {@code DataSource} has been closed.
 * <p>
 * Set {@code spring.datasource.url} (and {@code username}, {@code password}) to use a real MySQL or MariaDB
 * instead; nothing here is created then.
 */
@Configuration(proxyBeanMethods = false)
@Conditional(EmbeddedDatabaseConfiguration.NoDataSourceUrlCondition.class)
public class EmbeddedDatabaseConfiguration {

	/** The database the sample's tables and the lock table live in. */
	public static final String DATABASE = "sample";

	private static final Log logger = LogFactory.getLog(EmbeddedDatabaseConfiguration.class);

	@Bean(destroyMethod = "stop")
	EmbeddedMariaDb embeddedMariaDb(SampleProperties properties) {
		SampleProperties.EmbeddedDb settings = properties.getEmbeddedDb();
		long start = System.nanoTime();
		EmbeddedMariaDb db = EmbeddedMariaDb.start(settings.getPort(), settings.getDataDir(), DATABASE);
		logger.info("Embedded MariaDB started in " + (System.nanoTime() - start) / 1_000_000 + " ms. JDBC URL: "
				+ db.getJdbcUrl() + " (user " + db.getUsername() + ", no password). Another instance can share it with "
				+ "--spring.datasource.url=" + db.getJdbcUrl() + " --spring.datasource.username=" + db.getUsername());
		return db;
	}

	@Bean
	JdbcConnectionDetails embeddedMariaDbConnectionDetails(EmbeddedMariaDb db) {
		return new EmbeddedMariaDbConnectionDetails(db);
	}

	/**
	 * Connection details of the embedded database.
	 */
	static final class EmbeddedMariaDbConnectionDetails implements JdbcConnectionDetails {

		private final EmbeddedMariaDb db;

		EmbeddedMariaDbConnectionDetails(EmbeddedMariaDb db) {
			this.db = db;
		}

		@Override
		public String getJdbcUrl() {
			return this.db.getJdbcUrl();
		}

		@Override
		public String getUsername() {
			return this.db.getUsername();
		}

		@Override
		public String getPassword() {
			return this.db.getPassword();
		}

	}

	/**
	 * Matches when {@code spring.datasource.url} is not set (or blank), from any property source: command line,
	 * {@code application.yml}, environment variable {@code SPRING_DATASOURCE_URL}, ...
	 */
	static final class NoDataSourceUrlCondition extends SpringBootCondition {

		private static final String PROPERTY = "spring.datasource.url";

		@Override
		public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
			ConditionMessage.Builder message = ConditionMessage.forCondition("Embedded MariaDB");
			if (StringUtils.hasText(context.getEnvironment().getProperty(PROPERTY))) {
				return ConditionOutcome.noMatch(message.found("property").items(PROPERTY));
			}
			return ConditionOutcome.match(message.didNotFind("property").items(PROPERTY));
		}

	}

}
