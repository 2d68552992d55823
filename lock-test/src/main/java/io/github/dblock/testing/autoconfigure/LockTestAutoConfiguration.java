package io.github.dblock.testing.autoconfigure;

import io.github.dblock.LockTemplate;
import io.github.dblock.autoconfigure.DistributedLockAutoConfiguration;
import io.github.dblock.autoconfigure.DistributedLockProperties;
import io.github.dblock.autoconfigure.LockSchemaInitializer;
import io.github.dblock.testing.JdbcLockFaults;
import io.github.dblock.testing.LockFaults;
import io.github.dblock.testing.LockRecorder;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Role;

/**
 * The test kit's beans, imported by {@link AutoConfigureDistributedLocks} after the lock auto-configuration: a
 * {@link LockRecorder} attached to every {@link LockTemplate} bean as it is created, and {@link JdbcLockFaults} on
 * the lock table and data source the lock auto-configuration chose. Each backs off when the test defines its own.
 */
@AutoConfiguration(after = DistributedLockAutoConfiguration.class)
public final class LockTestAutoConfiguration {

	/**
	 * The recorder; static and without dependencies, so that the post-processor below can attach it to a template
	 * created early.
	 * @return a new recorder
	 */
	@Bean
	@ConditionalOnMissingBean
	static LockRecorder distributedLockRecorder() {
		return new LockRecorder();
	}

	/**
	 * Attaches the recorder to each {@link LockTemplate} bean once it is initialized.
	 * @param recorder the recorder bean, looked up when the first template appears
	 * @return the post-processor
	 */
	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static BeanPostProcessor distributedLockRecorderAttacher(ObjectProvider<LockRecorder> recorder) {
		return new BeanPostProcessor() {
			@Override
			public Object postProcessAfterInitialization(Object bean, String beanName) {
				if (bean instanceof LockTemplate template) {
					recorder.ifAvailable((available) -> available.attachTo(template));
				}
				return bean;
			}
		};
	}

	/**
	 * The faults, on the lock table and data source of the lock auto-configuration, with its statement timeout.
	 * @param schema the lock table and its data source
	 * @param properties {@code distributed-lock.statement-timeout}
	 * @return the faults; closed with the context (ending running stalls)
	 */
	@Bean
	@ConditionalOnBean(LockSchemaInitializer.class)
	@ConditionalOnMissingBean(LockFaults.class)
	JdbcLockFaults distributedLockFaults(LockSchemaInitializer schema, DistributedLockProperties properties) {
		return new JdbcLockFaults(schema.getDataSource(), schema.getTable(), properties.getStatementTimeout());
	}

}
