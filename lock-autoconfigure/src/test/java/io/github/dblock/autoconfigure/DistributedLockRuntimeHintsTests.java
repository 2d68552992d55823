package io.github.dblock.autoconfigure;

import java.io.IOException;
import java.lang.reflect.Method;
import java.util.List;

import com.zaxxer.hikari.HikariConfig;
import io.github.dblock.DistributedLock;
import io.github.dblock.LockIntrospection;
import io.github.dblock.LockTemplate;
import io.github.dblock.actuate.ForceReleasingLocksEndpoint;
import io.github.dblock.actuate.LocksEndpoint;
import io.github.dblock.idempotency.Idempotent;
import io.github.dblock.interceptor.LockExpressionRootObject;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.semaphore.DistributedSemaphore;
import org.junit.jupiter.api.Test;
import org.mockito.Mockito;
import org.springframework.aot.generate.ClassNameGenerator;
import org.springframework.aot.generate.DefaultGenerationContext;
import org.springframework.aot.generate.GenerationContext;
import org.springframework.aot.generate.InMemoryGeneratedFiles;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.beans.factory.aot.AotServices;
import org.springframework.beans.factory.aot.BeanRegistrationAotContribution;
import org.springframework.beans.factory.aot.BeanRegistrationAotProcessor;
import org.springframework.beans.factory.aot.BeanRegistrationCode;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.beans.factory.support.RegisteredBean;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;
import org.springframework.javapoet.ClassName;
import org.springframework.jdbc.datasource.AbstractDriverBasedDataSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The native-image hints of the starter ({@link DistributedLockRuntimeHints}) and of the application's annotated
 * beans ({@link LockedMethodsAotProcessor}), checked with Spring's {@link RuntimeHintsPredicates}: what the starter
 * reads reflectively or as a resource at run time must be registered.
 */
class DistributedLockRuntimeHintsTests {

	private final RuntimeHints hints = new RuntimeHints();

	DistributedLockRuntimeHintsTests() {
		new DistributedLockRuntimeHints().registerHints(this.hints, getClass().getClassLoader());
	}

	@Test
	void theRegistrarAndTheProcessorAreFoundBySpringAot() {
		assertThat(AotServices.factories(getClass().getClassLoader()).load(RuntimeHintsRegistrar.class))
			.hasAtLeastOneElementOfType(DistributedLockRuntimeHints.class);
		assertThat(AotServices.factories(getClass().getClassLoader()).load(BeanRegistrationAotProcessor.class))
			.hasAtLeastOneElementOfType(LockedMethodsAotProcessor.class);
	}

	@Test
	void everyMigrationScriptInTheJarIsARegisteredResource() throws IOException {
		Resource[] scripts = new PathMatchingResourcePatternResolver()
			.getResources("classpath*:io/github/dblock/db/migration/*.sql");
		assertThat(scripts).hasSizeGreaterThanOrEqualTo(6);
		for (Resource script : scripts) {
			assertThat(RuntimeHintsPredicates.resource()
				.forResource("io/github/dblock/db/migration/" + script.getFilename())).accepts(this.hints);
		}
		assertThat(RuntimeHintsPredicates.resource().forResource("io/github/dblock/db/migration/V1__create_lock_table.sql"))
			.accepts(this.hints);
	}

	@Test
	void theAnnotationsAttributesAndTheirSynthesizedProxiesAreRegistered() {
		for (Class<?> annotation : List.of(DistributedLock.class, DistributedSemaphore.class, Idempotent.class)) {
			assertThat(RuntimeHintsPredicates.reflection()
				.onType(annotation)
				.withMemberCategory(MemberCategory.INVOKE_DECLARED_METHODS)).accepts(this.hints);
			assertThat(RuntimeHintsPredicates.proxies().forInterfaces(annotation)).accepts(this.hints);
		}
	}

	@Test
	void theExpressionRootObjectsAccessorsAreInvocable() {
		for (String accessor : List.of("method", "args", "target", "targetClass", "methodName")) {
			assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(LockExpressionRootObject.class, accessor))
				.as(accessor)
				.accepts(this.hints);
		}
	}

	@Test
	void theActuatorEndpointsOperationsAndTheRecordsTheyReturnAreRegistered() {
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(LocksEndpoint.class, "locks"))
			.accepts(this.hints);
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(LocksEndpoint.class, "lock"))
			.accepts(this.hints);
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(ForceReleasingLocksEndpoint.class,
				"forceRelease")).accepts(this.hints);
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(LocksEndpoint.LocksDescriptor.class,
				"localHolds")).accepts(this.hints);
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(LockTableAdmin.LockRow.class, "fencingToken"))
			.accepts(this.hints);
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(LockIntrospection.LocalHold.class, "holdCount"))
			.accepts(this.hints);
	}

	@Test
	void theGettersReadReflectivelyFromDataSourcesAreInvocable() {
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(HikariConfig.class, "getJdbcUrl"))
			.accepts(this.hints);
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(AbstractDriverBasedDataSource.class, "getUrl"))
			.accepts(this.hints);
	}

	@Test
	void anAnnotatedBeansMethodsParameterTypesAndIdempotentOutcomesAreRegistered() throws Exception {
		GenerationContext generation = contribute(ShippingService.class);
		RuntimeHints beanHints = generation.getRuntimeHints();
		assertThat(RuntimeHintsPredicates.reflection().onType(ShippingService.class)).accepts(beanHints);
		Method ship = ShippingService.class.getDeclaredMethod("ship", Order.class);
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(ship)).accepts(beanHints);
		// #{#order.id} and #{#order.customer().name()} are evaluated reflectively
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Order.class, "id")).accepts(beanHints);
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Customer.class, "name")).accepts(beanHints);
		// an @Idempotent outcome is written and read back as JSON
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Receipt.class, "trackingNumber"))
			.accepts(beanHints);
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Receipt.class, "other")).rejects(beanHints);
	}

	@Test
	void aBeanWithoutAnnotatedMethodsContributesNothing() {
		DefaultListableBeanFactory beanFactory = new DefaultListableBeanFactory();
		beanFactory.registerBeanDefinition("plain", new RootBeanDefinition(Receipt.class));
		assertThat(new LockedMethodsAotProcessor().processAheadOfTime(RegisteredBean.of(beanFactory, "plain"))).isNull();
	}

	private static GenerationContext contribute(Class<?> beanClass) {
		DefaultListableBeanFactory beanFactory = new DefaultListableBeanFactory();
		beanFactory.registerBeanDefinition("bean", new RootBeanDefinition(beanClass));
		BeanRegistrationAotContribution contribution = new LockedMethodsAotProcessor()
			.processAheadOfTime(RegisteredBean.of(beanFactory, "bean"));
		assertThat(contribution).isNotNull();
		GenerationContext generation = new DefaultGenerationContext(
				new ClassNameGenerator(ClassName.get("com.example", "Application")), new InMemoryGeneratedFiles());
		contribution.applyTo(generation, Mockito.mock(BeanRegistrationCode.class));
		return generation;
	}

	public record Customer(String name) {
	}

	public record Order(String id, Customer customer) {
	}

	public record Receipt(String trackingNumber) {

		public String other() {
			return "not a property";
		}

	}

	public static class ShippingService {

		@DistributedLock("order:#{#order.id}")
		public void ship(Order order) {
		}

		@Idempotent(key = "#{#order.id}")
		public Receipt receipt(Order order) {
			return new Receipt(order.id());
		}

		public void unlocked() {
		}

	}

}
